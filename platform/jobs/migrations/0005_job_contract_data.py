# The job contract (biolm.contract, version 1): every job's spec becomes the typed, versioned document of its
# kind; "aggregate" jobs become "score" jobs; runs of cross-validation jobs get their fold in a column of its
# own instead of inside the seed (fold * 1000 + seed), chosen by the job's cross-validation flag, not by the
# seed's size (a first seed can exceed 1000); Run.efficiency, written and never read, goes.
#
# Specs are written here as plain JSON of version 1, not through biolm.contract, so that this migration keeps
# meaning the same when the contract's code moves on. Jobs queued before code pins existed pin biolm by version
# only (an empty fingerprint), and their plugins by distribution and version, as they were recorded.

from django.db import migrations

OVERRIDES = ("grid", "seeds", "first_seed", "epochs", "learning_rate", "batch_size", "max_length",
             "max_train_examples", "max_eval_examples", "precision")
BIOLM_VERSION = "0.1.0"


def _code(plugins):
    pins = [{"name": "biolm", "distribution": "biolm", "version": BIOLM_VERSION, "fingerprint": "", "provides": []}]
    for name, label in sorted((plugins or {}).items()):
        distribution, _, version = str(label).rpartition(" ")
        pins.append({"name": name, "distribution": distribution or str(label), "version": version,
                     "fingerprint": "", "provides": []})
    return pins


def _finetune(spec, job, apps, previews):
    Benchmark = apps.get_model("registry", "Benchmark")
    BenchmarkEntry = apps.get_model("registry", "BenchmarkEntry")
    benchmark = Benchmark.objects.filter(slug=spec.get("benchmark")).first()
    entry = (BenchmarkEntry.objects.filter(benchmark=benchmark, dataset__slug=spec.get("dataset"))
             .order_by("position").select_related("metric").first()) if benchmark else None
    old_model = spec.get("model") or {}
    if "artefacts" in old_model:
        model = {"checkpoint": old_model["artefacts"], "prefix": old_model.get("prefix", "")}
    else:
        model = {"pretrained_by": old_model.get("from_job"), "prefix": old_model.get("prefix", "")}
    overrides = {key: value for key, value in (spec.get("protocol") or {}).items() if key in OVERRIDES}
    return {
        "version": 1, "kind": "finetune", "dataset": spec.get("dataset"), "benchmark": spec.get("benchmark"),
        "protocol": benchmark.protocol if benchmark else "blurb",
        "metric": entry.metric.slug if entry else (job.dataset.metric.slug if job.dataset_id else ""),
        "overrides": overrides, "task_options": {},
        "preview": job.pk in previews or bool(job.submission_id and job.submission.preview),
        "cross_validation": bool(spec.get("cross_validation")), "model": model, "code": _code(spec.get("plugins")),
    }


def _score(spec, job):
    return {
        "version": 1, "kind": "score", "dataset": spec.get("dataset"), "benchmark": spec.get("benchmark"),
        "metric": spec.get("metric"), "variant": spec.get("variant") or "", "finetune_job": spec.get("finetune_job"),
        "preview": bool(spec.get("preview")) or bool(job.submission_id and job.submission.preview),
        "code": _code(spec.get("plugins")),
    }


def _pretrain(spec):
    return {
        "version": 1, "kind": "pretrain", "recipe": spec.get("recipe"), "corpus": spec.get("corpus"),
        "output": spec.get("output"), "steps": spec.get("steps"), "settings": spec.get("settings") or {},
        "gpus": int(spec.get("gpus") or 1), "code": _code(spec.get("plugins")),
    }


def to_contract(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    Run = apps.get_model("jobs", "Run")
    Job.objects.filter(kind="aggregate").update(kind="score")
    previews = {job.spec.get("finetune_job") for job in Job.objects.filter(kind="score") if job.spec.get("preview")}
    for job in Job.objects.select_related("dataset__metric", "submission").iterator():
        spec = job.spec or {}
        if spec.get("version") == 1:
            continue
        if job.kind == "finetune":
            new = _finetune(spec, job, apps, previews)
            if new["cross_validation"]:
                _split_folds(Run, job, overrides=new["overrides"])
        elif job.kind == "score":
            new = _score(spec, job)
        else:
            new = _pretrain(spec)
        Job.objects.filter(pk=job.pk).update(spec=new)


def from_contract(apps, schema_editor):
    """Back to the shapes before the contract (for a rollback of the release that brought it)."""
    Job = apps.get_model("jobs", "Job")
    Run = apps.get_model("jobs", "Run")
    for job in Job.objects.iterator():
        spec = job.spec or {}
        if spec.get("version") != 1:
            continue
        plugins = {pin["name"]: f"{pin['distribution']} {pin['version']}".strip()
                   for pin in spec.get("code", []) if pin.get("name") != "biolm" and pin.get("distribution")}
        if job.kind == "finetune":
            model = spec.get("model") or {}
            old_model = ({"artefacts": model["checkpoint"], "prefix": model.get("prefix", "")} if "checkpoint" in model
                         else {"from_job": model.get("pretrained_by"), "prefix": model.get("prefix", "")})
            old = {"kind": "finetune", "benchmark": spec.get("benchmark"), "dataset": spec.get("dataset"),
                   "protocol": spec.get("overrides") or {}, "model": old_model, "plugins": plugins}
            if spec.get("cross_validation"):
                old["cross_validation"] = True
                for run in Run.objects.filter(job=job).exclude(fold=0):
                    Run.objects.filter(pk=run.pk).update(seed=run.fold * 1000 + run.seed, fold=0)
        elif job.kind == "score":
            old = {"kind": "aggregate", **{k: spec.get(k) for k in ("benchmark", "dataset", "metric", "variant",
                                                                       "finetune_job")}, "plugins": plugins}
            if spec.get("preview"):
                old["preview"] = True
        else:
            old = {"kind": "pretrain", **{k: spec.get(k) for k in ("recipe", "steps", "settings", "corpus", "gpus",
                                                                      "output")}}
        Job.objects.filter(pk=job.pk).update(spec=old)
    Job.objects.filter(kind="score").update(kind="aggregate")


def _split_folds(Run, job, overrides):
    """fold * 1000 + seed -> (fold, seed), knowing the seeds start at the job's first seed (42 by default)."""
    first = int(overrides.get("first_seed", 42))
    for run in Run.objects.filter(job=job, fold=0):
        seed = first + (run.seed - first) % 1000
        Run.objects.filter(pk=run.pk).update(fold=(run.seed - seed) // 1000, seed=seed)


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0004_job_contract'),
    ]

    operations = [
        migrations.RunPython(to_contract, from_contract, elidable=False),
    ]
