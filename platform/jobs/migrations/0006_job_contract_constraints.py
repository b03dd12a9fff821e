# After the job contract's data migration (0005), in a transaction of its own: Run.efficiency goes, and runs are
# unique per job, point, fold, seed and split.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0005_job_contract_data'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='run',
            name='efficiency',
        ),
        migrations.AlterField(
            model_name='job',
            name='failure_cause',
            field=models.CharField(blank=True, choices=[('', '-'), ('platform', "the platform's (refunded)"), ('submission', "the submission's"), ('plugin', "a plugin's code (not retried, refunded)")], default='', max_length=10),
        ),
        migrations.AlterField(
            model_name='job',
            name='spec',
            field=models.JSONField(default=dict, help_text="The job's typed, versioned spec (biolm.contract), checked at submit, never changed."),
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(fields=('job', 'hyperparameters_key', 'fold', 'seed', 'split'), name='unique_run_per_job_point_fold_seed_split'),
        ),
    ]
