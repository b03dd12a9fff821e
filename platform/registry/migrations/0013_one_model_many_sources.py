"""One model, many sources (issue 30): the tables the merge of per-paper rows needs (0014 merges them).

``LanguageModel.version_of`` links two checkpoints of one model (BioBERT-Large v1.1 beside BioBERT-Base
v1.1); a ``ModelAlias`` per published row keeps what that paper calls the model, its table, and the row's
former key, whose old URLs redirect. Schema only: PostgreSQL creates no index while row changes are pending.
"""

from django.db import migrations, models
import django.db.models.deletion


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0012_language_model_base_model"),
    ]

    operations = [
        migrations.AddField(
            model_name="languagemodel",
            name="version_of",
            field=models.ForeignKey(
                blank=True,
                help_text="The model this one is another version (checkpoint) of; both pages link the other.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="versions",
                to="registry.languagemodel",
            ),
        ),
        migrations.CreateModel(
            name="ModelAlias",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("row", models.CharField(help_text="The row's slug in the benchmark's table.", max_length=150)),
                ("name", models.CharField(help_text="The model's name in that paper.", max_length=200)),
                ("source", models.CharField(blank=True, help_text="The paper and table of the row.", max_length=300)),
                ("notes", models.TextField(blank=True, help_text="What the paper's row says of the model.")),
                (
                    "former_slug",
                    models.CharField(
                        help_text="The row's own model key before identities: papers/<this> redirects to the model.",
                        max_length=150,
                        unique=True,
                    ),
                ),
                (
                    "benchmark",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="model_aliases",
                        to="registry.benchmark",
                    ),
                ),
                (
                    "language_model",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="aliases",
                        to="registry.languagemodel",
                    ),
                ),
            ],
            options={
                "ordering": ["benchmark__name"],
                "constraints": [
                    models.UniqueConstraint(fields=("benchmark", "row"), name="one_alias_per_published_row")
                ],
            },
        ),
    ]
