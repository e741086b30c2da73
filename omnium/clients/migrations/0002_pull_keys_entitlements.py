import django.db.models.deletion
import omnium.clients.transforms
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('clients', '0001_initial'),
        ('feeds', '0002_feed_document_seq'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(help_text='What the key is for, e.g. “production 2026”.', max_length=100)),
                ('lookup_id', models.CharField(editable=False, help_text='The public start of the key; the rest is secret.', max_length=16, unique=True)),
                ('key_hash', models.CharField(editable=False, max_length=64)),
                ('query_string_allowed', models.BooleanField(default=False, help_text='Legacy clients only: accept the key as ?key= in the address (scrubbed from logs).')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('client', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='clients.client')),
                ('revoked_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'API key',
            },
        ),
        migrations.CreateModel(
            name='Entitlement',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('filter', models.CharField(blank=True, help_text='For a per-country feed: one NOC code, or blank for every country.', max_length=30)),
                ('transform', models.CharField(choices=omnium.clients.transforms.choices, default='json', max_length=20)),
                ('include_version', models.BooleanField(default=False, help_text='Put the version number in the file.')),
                ('include_result_marks', models.BooleanField(default=True, help_text='Keep provisional / official marks.')),
                ('active', models.BooleanField(default=True)),
                ('client', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entitlements', to='clients.client')),
                ('definition', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='entitlements', to='feeds.feeddefinition')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('client', 'definition', 'filter'), name='one_entitlement_per_file')],
            },
        ),
    ]
