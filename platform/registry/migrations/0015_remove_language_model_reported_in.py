"""A reported model is no longer one paper's row: it is on every benchmark its results name (their scope), and
each paper's row is a ModelAlias (0014, which used ``reported_in`` to merge the rows). Apart from 0014 because
PostgreSQL alters no table while that migration's row changes are pending."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0014_merge_reported_rows"),
    ]

    operations = [
        migrations.RemoveField(model_name="languagemodel", name="reported_in"),
    ]
