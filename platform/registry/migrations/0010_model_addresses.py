"""Models get ``owner/name`` addresses: a submitted model lives under its owner's username, a reported
one (and one registered without an owner) under ``papers``; each keeps its slug as its name, so every
existing model's address is free and its old URL can redirect to it."""

from django.db import migrations, models

PAPERS_NAMESPACE = "papers"


def give_addresses(apps, schema_editor) -> None:
    """Each model's address from its owner and slug (slugs are unique, so no two addresses collide)."""
    LanguageModel = apps.get_model("registry", "LanguageModel")
    for model in LanguageModel.objects.select_related("owner").filter(namespace=""):
        model.namespace = model.owner.username if model.owner_id else PAPERS_NAMESPACE
        model.address_name = model.slug
        model.save(update_fields=["namespace", "address_name"])


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0009_protocols_and_plugins"),
    ]

    operations = [
        migrations.AddField(
            model_name="languagemodel",
            name="namespace",
            field=models.CharField(
                blank=True,
                help_text="Its submitter's username, or papers for a reported model.",
                max_length=150,
            ),
        ),
        migrations.AddField(
            model_name="languagemodel",
            name="address_name",
            field=models.CharField(blank=True, max_length=150),
        ),
        migrations.RunPython(give_addresses, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="languagemodel",
            constraint=models.UniqueConstraint(
                fields=("namespace", "address_name"), name="unique_model_address_per_namespace"
            ),
        ),
    ]
