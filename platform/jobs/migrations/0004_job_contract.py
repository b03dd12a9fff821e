# The job contract (biolm.contract, version 1): every job's spec becomes the typed, versioned document of its
# kind; "aggregate" jobs become "score" jobs; runs of cross-validation jobs get their fold in a column of its
# own instead of inside the seed (fold * 1000 + seed), chosen by the job's cross-validation flag, not by the
# seed's size (a first seed can exceed 1000); Run.efficiency, written and never read, goes.
#
# Specs are written here as plain JSON of version 1, not through biolm.contract, so that this migration keeps
# meaning the same when the contract's code moves on. Jobs queued before code pins existed pin biolm by version
# only (an empty fingerprint), and their plugins by distribution and version, as they were recorded.

from django.db import migrations, models

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
        "overrides": overrides, "task_options": {}, "preview": job.pk in previews,
        "cross_validation": bool(spec.get("cross_validation")), "model": model, "code": _code(spec.get("plugins")),
    }


def _score(spec):
    return {
        "version": 1, "kind": "score", "dataset": spec.get("dataset"), "benchmark": spec.get("benchmark"),
        "metric": spec.get("metric"), "variant": spec.get("variant") or "", "finetune_job": spec.get("finetune_job"),
        "preview": bool(spec.get("preview")), "code": _code(spec.get("plugins")),
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
    for job in Job.objects.select_related("dataset__metric").iterator():
        spec = job.spec or {}
        if spec.get("version") == 1:
            continue
        if job.kind == "finetune":
            new = _finetune(spec, job, apps, previews)
            if new["cross_validation"]:
                _split_folds(Run, job, overrides=new["overrides"])
        elif job.kind == "score":
            new = _score(spec)
        else:
            new = _pretrain(spec)
        Job.objects.filter(pk=job.pk).update(spec=new)


def _split_folds(Run, job, overrides):
    """fold * 1000 + seed -> (fold, seed), knowing the seeds start at the job's first seed (42 by default)."""
    first = int(overrides.get("first_seed", 42))
    for run in Run.objects.filter(job=job, fold=0):
        seed = first + (run.seed - first) % 1000
        Run.objects.filter(pk=run.pk).update(fold=(run.seed - seed) // 1000, seed=seed)


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0003_worker_problems_and_plugin_failures'),
        ('registry', '0009_protocols_and_plugins'),
        ('submissions', '0004_preview'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='run',
            name='unique_run_per_job_point_seed_split',
        ),
        migrations.AddField(
            model_name='run',
            name='fold',
            field=models.PositiveSmallIntegerField(default=0, help_text='The cross-validation fold (from 1) of a protocol that runs on folds; 0 without folds.'),
        ),
        migrations.AddField(
            model_name='job',
            name='blamed_plugin',
            field=models.CharField(blank=True, help_text='The plugin whose code failed the job (cause: plugin), or biolm.', max_length=200),
        ),
        migrations.AlterField(
            model_name='job',
            name='kind',
            field=models.CharField(choices=[('pretrain', 'pretrain a recipe on a corpus'), ('finetune', "the benchmark's protocol on one dataset"), ('score', 'score the test predictions and record the results')], max_length=10),
        ),
        migrations.RunPython(to_contract, elidable=False),
    ]
