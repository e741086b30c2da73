"""One shape per client, for pull and push alike.

Each client takes the shape most of its active entitlements had (ties: the earliest row's),
or, without entitlements, the shape most of its subscriptions had. Entitlements win because
they lose their own shape fields: choosing from them changes the fewest pulled files.
Subscriptions keep exactly the shape they had: a field equal to the client's is cleared (it
now follows the client), a field that differs stays as the subscription's override. So no
pushed file changes; a pull entitlement whose shape disagreed with its client's siblings now
gets the client's shape.
"""

from collections import Counter

from django.db import migrations, models

import omnium.clients.transforms

SHAPE_FIELDS = ("transform", "include_version", "include_result_marks")
AS_BUILT = ("json", False, True)


def chosen_shape(entitlement_shapes: list[tuple], subscription_shapes: list[tuple]) -> tuple:
    """The most common shape of the entitlements (else of the subscriptions), in row order
    for ties (Counter.most_common is stable), as built when the client has neither."""
    shapes = entitlement_shapes or subscription_shapes
    return Counter(shapes).most_common(1)[0][0] if shapes else AS_BUILT


def one_shape_per_client(apps, schema_editor):
    Client, Entitlement, Subscription = (apps.get_model("clients", name)
                                         for name in ("Client", "Entitlement", "Subscription"))
    for client in Client.objects.order_by("pk"):
        subscriptions = Subscription.objects.filter(destination__client=client).order_by("pk")
        shape = chosen_shape(
            list(Entitlement.objects.filter(client=client, active=True).order_by("pk").values_list(*SHAPE_FIELDS)),
            list(subscriptions.filter(active=True).values_list(*SHAPE_FIELDS)))
        Client.objects.filter(pk=client.pk).update(**dict(zip(SHAPE_FIELDS, shape, strict=True)))
        subscriptions.filter(transform=shape[0]).update(transform="")
        subscriptions.filter(include_version=shape[1]).update(include_version=None)
        subscriptions.filter(include_result_marks=shape[2]).update(include_result_marks=None)


def shape_per_row_again(apps, schema_editor):
    Client, Entitlement, Subscription = (apps.get_model("clients", name)
                                         for name in ("Client", "Entitlement", "Subscription"))
    for client in Client.objects.all():
        shape = dict(zip(SHAPE_FIELDS, (client.transform, client.include_version, client.include_result_marks),
                         strict=True))
        Entitlement.objects.filter(client=client).update(**shape)
        subscriptions = Subscription.objects.filter(destination__client=client)
        subscriptions.filter(transform="").update(transform=shape["transform"])
        subscriptions.filter(include_version=None).update(include_version=shape["include_version"])
        subscriptions.filter(include_result_marks=None).update(include_result_marks=shape["include_result_marks"])


class Migration(migrations.Migration):

    dependencies = [
        ('clients', '0002_pull_keys_entitlements'),
    ]

    operations = [
        migrations.AddField(
            model_name='client',
            name='include_result_marks',
            field=models.BooleanField(default=True, help_text='Keep provisional / official marks.'),
        ),
        migrations.AddField(
            model_name='client',
            name='include_version',
            field=models.BooleanField(default=False, help_text='Put the version number in the file.'),
        ),
        migrations.AddField(
            model_name='client',
            name='transform',
            field=models.CharField(choices=omnium.clients.transforms.choices, default='json', help_text='How its files are shaped, pulled and pushed alike (a subscription may override it).', max_length=20),
        ),
        migrations.AlterField(
            model_name='subscription',
            name='include_result_marks',
            field=models.BooleanField(blank=True, default=None, help_text='Keep provisional / official marks (blank: as the client).', null=True),
        ),
        migrations.AlterField(
            model_name='subscription',
            name='include_version',
            field=models.BooleanField(blank=True, default=None, help_text='Put the version number in the file (blank: as the client).', null=True),
        ),
        migrations.AlterField(
            model_name='subscription',
            name='transform',
            field=models.CharField(blank=True, choices=omnium.clients.transforms.choices, default='', help_text="Blank: the client's transform.", max_length=20),
        ),
        migrations.RunPython(one_shape_per_client, shape_per_row_again),
        migrations.RemoveField(
            model_name='entitlement',
            name='include_result_marks',
        ),
        migrations.RemoveField(
            model_name='entitlement',
            name='include_version',
        ),
        migrations.RemoveField(
            model_name='entitlement',
            name='transform',
        ),
    ]
