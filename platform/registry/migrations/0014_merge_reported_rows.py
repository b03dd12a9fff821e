"""One model, many sources (issue 30): the per-paper rows of one checkpoint become one model.

Before, each benchmark's published table made a model of each of its rows (``papers/blurb--biobert``,
``papers/lewis2020--biobert``, ...), so BioBERT had five entries, three of them BioBERT-Base v1.1. Each published row now names
its model identity (``biolm.specs.ModelIdentity``); this migration merges today's rows into those
identities, as the next ``sync_plugins`` would have them: the first row of an identity becomes the model
(re-addressed to the identity's ``owner/name``), the others' results, scores (with their resamples),
jobs, runs and submissions move to it and the rows go. Results keep their scope (the benchmark) and
source (the paper and table), so nothing collides. A :class:`ModelAlias` per row keeps what the paper
called the model and its former key, whose old URLs (snapshots taken before link them, unchanged)
redirect to the merged model. Two checkpoints of one model (BioBERT-Large v1.1) are linked by
``version_of``. ``reported_in`` goes in 0015 (PostgreSQL alters no table with this migration's row
changes pending; the new table and link come in 0013, for the same reason): a model reported by several papers is on several benchmarks, read from its results'
scopes.

MERGED is the built-in tables' identities when this was written (rows missing from it keep a model of
their own, as a row that names no identity does); a later change of the tables is ``sync_plugins``'s.
"""

from django.db import migrations

# (benchmark, row) -> (address, canonical name, Hugging Face id, address it is a version of)
MERGED = {
    ("blurb", "bert-base-uncased"): (
        "google-bert/bert-base-uncased",
        "BERT-Base (uncased)",
        "google-bert/bert-base-uncased",
        "",
    ),
    ("blurb", "bert-base-cased"): (
        "google-bert/bert-base-cased",
        "BERT-Base (cased)",
        "google-bert/bert-base-cased",
        "",
    ),
    ("blurb", "roberta"): ("papers/blurb--roberta", "RoBERTa (size not stated)", "", ""),
    ("blurb", "biobert"): ("dmis-lab/biobert-v1.1", "BioBERT-Base v1.1", "dmis-lab/biobert-v1.1", ""),
    ("blurb", "scibert-uncased"): (
        "allenai/scibert_scivocab_uncased",
        "SciBERT (scivocab, uncased)",
        "allenai/scibert_scivocab_uncased",
        "",
    ),
    ("blurb", "scibert-cased"): (
        "allenai/scibert_scivocab_cased",
        "SciBERT (scivocab, cased)",
        "allenai/scibert_scivocab_cased",
        "",
    ),
    ("blurb", "clinicalbert"): (
        "emilyalsentzer/Bio_ClinicalBERT",
        "Bio+ClinicalBERT",
        "emilyalsentzer/Bio_ClinicalBERT",
        "",
    ),
    ("blurb", "pubmedbert"): (
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
        "PubMedBERT",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
        "",
    ),
    ("blurb", "pubmedbert-wiki-books-wordpiece"): (
        "papers/blurb--pubmedbert-wiki-books-wordpiece",
        "PubMedBERT (Wiki + Books vocabulary, WordPiece masking)",
        "",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
    ),
    ("blurb", "pubmedbert-wiki-books-wwm"): (
        "papers/blurb--pubmedbert-wiki-books-wwm",
        "PubMedBERT (Wiki + Books vocabulary, whole-word masking)",
        "",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
    ),
    ("blurb", "pubmedbert-pubmed-wordpiece"): (
        "papers/blurb--pubmedbert-pubmed-wordpiece",
        "PubMedBERT (PubMed vocabulary, WordPiece masking)",
        "",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
    ),
    ("blurb", "pubmedbert-pubmed-pmc"): (
        "papers/blurb--pubmedbert-pubmed-pmc",
        "PubMedBERT (PubMed + PMC)",
        "",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
    ),
    ("blurb", "pubmedbert-pubmed-pmc-longer"): (
        "papers/blurb--pubmedbert-pubmed-pmc-longer",
        "PubMedBERT (PubMed + PMC, longer training)",
        "",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
    ),
    ("blurb", "pubmedbert-adversarial"): (
        "papers/blurb--pubmedbert-adversarial",
        "PubMedBERT (+ adversarial pretraining)",
        "",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
    ),
    ("lewis2020", "roberta-base"): ("FacebookAI/roberta-base", "RoBERTa-base", "FacebookAI/roberta-base", ""),
    ("lewis2020", "scibert"): (
        "allenai/scibert_scivocab_uncased",
        "SciBERT (scivocab, uncased)",
        "allenai/scibert_scivocab_uncased",
        "",
    ),
    ("lewis2020", "biobert"): ("dmis-lab/biobert-v1.1", "BioBERT-Base v1.1", "dmis-lab/biobert-v1.1", ""),
    ("lewis2020", "clinicalbert"): (
        "emilyalsentzer/Bio_ClinicalBERT",
        "Bio+ClinicalBERT",
        "emilyalsentzer/Bio_ClinicalBERT",
        "",
    ),
    ("lewis2020", "biomed-roberta"): (
        "allenai/biomed_roberta_base",
        "BioMed-RoBERTa-base",
        "allenai/biomed_roberta_base",
        "",
    ),
    ("lewis2020", "roberta-large"): ("FacebookAI/roberta-large", "RoBERTa-large", "FacebookAI/roberta-large", ""),
    ("gatortron", "biobert"): (
        "dmis-lab/biobert-large-cased-v1.1",
        "BioBERT-Large v1.1",
        "dmis-lab/biobert-large-cased-v1.1",
        "dmis-lab/biobert-v1.1",
    ),
    ("gatortron", "clinicalbert"): (
        "emilyalsentzer/Bio_ClinicalBERT",
        "Bio+ClinicalBERT",
        "emilyalsentzer/Bio_ClinicalBERT",
        "",
    ),
    ("gatortron", "gatortron-base-quarter-data"): (
        "papers/gatortron--gatortron-base-quarter-data",
        "GatorTron-base (1/4 data)",
        "",
        "UFNLP/gatortron-base",
    ),
    ("gatortron", "gatortron-base"): ("UFNLP/gatortron-base", "GatorTron-base", "UFNLP/gatortron-base", ""),
    ("gatortron", "gatortron-medium"): ("UFNLP/gatortron-medium", "GatorTron-medium", "UFNLP/gatortron-medium", ""),
    ("clinical-longformer", "biobert"): (
        "papers/clinical-longformer--biobert",
        "BioBERT (version not stated)",
        "",
        "dmis-lab/biobert-v1.1",
    ),
    ("clinical-longformer", "clinicalbert"): (
        "emilyalsentzer/Bio_ClinicalBERT",
        "Bio+ClinicalBERT",
        "emilyalsentzer/Bio_ClinicalBERT",
        "",
    ),
    ("clinical-longformer", "clinical-longformer"): (
        "yikuan8/Clinical-Longformer",
        "Clinical-Longformer",
        "yikuan8/Clinical-Longformer",
        "",
    ),
    ("clinical-longformer", "clinical-bigbird"): (
        "yikuan8/Clinical-BigBird",
        "Clinical-BigBird",
        "yikuan8/Clinical-BigBird",
        "",
    ),
    ("bioformer", "bioformer-8l"): ("bioformers/bioformer-8L", "Bioformer-8L", "bioformers/bioformer-8L", ""),
    ("bioformer", "bioformer-16l"): ("bioformers/bioformer-16L", "Bioformer-16L", "bioformers/bioformer-16L", ""),
    ("bioformer", "biobert-base-v1.1"): ("dmis-lab/biobert-v1.1", "BioBERT-Base v1.1", "dmis-lab/biobert-v1.1", ""),
    ("bioformer", "pubmedbert-abs"): (
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
        "PubMedBERT (abstracts)",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
        "",
    ),
    ("bioformer", "pubmedbert-absfull"): (
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext",
        "PubMedBERT (abstracts + full text)",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext",
        "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
    ),
}


def _identity(model, bench: str) -> tuple[str, str, str, str]:
    row = model.slug[len(bench) + 2 :]
    return MERGED.get((bench, row)) or (f"papers/{model.slug}", model.name, model.checkpoint, "")


def _move(apps, old, target) -> None:
    """Everything that points at ``old`` now points at ``target`` (results keep scope and source)."""
    for app, name in (
        ("leaderboard", "Result"),
        ("leaderboard", "Score"),
        ("jobs", "Job"),
        ("jobs", "Run"),
        ("submissions", "Submission"),
    ):
        apps.get_model(app, name).objects.filter(language_model=old).update(language_model=target)


def merge_reported_rows(apps, schema_editor) -> None:
    LanguageModel = apps.get_model("registry", "LanguageModel")
    ModelAlias = apps.get_model("registry", "ModelAlias")
    reported = LanguageModel.objects.filter(origin="reported", reported_in__isnull=False).select_related("reported_in")
    targets: dict[str, object] = {}
    links: dict[str, str] = {}
    for model in reported.order_by("pk"):
        bench = model.reported_in.slug
        if not model.slug.startswith(f"{bench}--"):
            continue
        address, name, hf_id, version_of = _identity(model, bench)
        alias = {
            "benchmark_id": model.reported_in_id,
            "row": model.slug[len(bench) + 2 :],
            "name": model.name,
            "source": model.source_paper,
            "notes": model.notes,
            "former_slug": model.slug,
        }
        target = targets.get(address)
        if target is None:
            target = model
            namespace, address_name = address.split("/", 1)
            target.slug, target.namespace, target.address_name = (
                address_name.lower() if namespace == "papers" else address.lower().replace("/", "--"),
                namespace,
                address_name,
            )
            target.name, target.checkpoint = name, hf_id or target.checkpoint
            target.save()
            targets[address] = target
        else:
            _move(apps, model, target)
            model.delete()
        ModelAlias.objects.create(language_model=target, **alias)
        if version_of:
            links[address] = version_of
    for address, version_of in links.items():
        if version_of in targets:
            LanguageModel.objects.filter(pk=targets[address].pk).update(version_of=targets[version_of].pk)


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0013_one_model_many_sources"),
        ("leaderboard", "0004_preview_results"),
        ("jobs", "0007_worker_gpus"),
        ("submissions", "0004_preview"),
    ]

    operations = [
        migrations.RunPython(merge_reported_rows, migrations.RunPython.noop),
    ]
