# The job contract (biolm.contract), its schema first: Run.fold, Job.blamed_plugin, the score kind. The data
# follows in 0005, each in a transaction of its own (PostgreSQL refuses to alter a table with pending trigger
# events from rows changed in the same transaction).

from django.db import migrations, models


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
    ]
