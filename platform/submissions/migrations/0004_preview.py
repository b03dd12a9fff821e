# "Protocol" means a paper's procedure only: full protocol or quick preview is the boolean `preview`.

from django.db import migrations, models


def protocol_to_preview(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(protocol="quick").update(preview=True)


def preview_to_protocol(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(preview=True).update(protocol="quick")


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0003_protocol_and_notification'),
    ]

    operations = [
        migrations.AddField(
            model_name='submission',
            name='preview',
            field=models.BooleanField(default=False, help_text='A quick preview (one grid point, one seed): its results are marked as such and never ranked beside results of the full protocol.'),
        ),
        migrations.RunPython(protocol_to_preview, preview_to_protocol),
        migrations.RemoveField(
            model_name='submission',
            name='protocol',
        ),
    ]
