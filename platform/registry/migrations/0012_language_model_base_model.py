"""A model states the checkpoint it continued pretraining from (issue 30, the submission form's base
model): it feeds the leaderboard's initialisation filter, continual when given."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0011_language_model_parameter_count_source'),
    ]

    operations = [
        migrations.AddField(
            model_name='languagemodel',
            name='base_model',
            field=models.CharField(
                blank=True,
                help_text='The checkpoint it continued pretraining from, if any (a Hub id or name).',
                max_length=200,
            ),
        ),
    ]
