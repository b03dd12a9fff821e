"""A reported model's parameter count carries where it is stated (issue 30, sizes for every model); the
counts and sources themselves come from the benchmark plugins at the next sync_plugins."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0010_model_addresses'),
    ]

    operations = [
        migrations.AddField(
            model_name='languagemodel',
            name='parameter_count_source',
            field=models.CharField(blank=True, help_text='Where the count is stated (paper and table, or model card); blank when counted from the weights.', max_length=300),
        ),
    ]
