"""/ui/entities/: the list with search, type filter and keyset paging; one entity with its claims, names and
neighbourhood graph; rename, aliases, merge (preview, then apply) and delete through the node services."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from memory.access import access_for_user
from memory.models import Alias, Claim, Node, User
from memory.selectors import node_neighborhood
from memory.services.nodes import node_merge
from tests.conftest import Api, Persona
from tests.factories import NodeFactory, PartitionFactory, UserFactory
from tests.web.conftest import post_without_csrf, screenshots, sign_in_as
from tests.web.memories import say

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def brothers(api: Api, owner: Persona) -> tuple[Node, Node]:
    """Two spellings of one brother, from two conversations, as the pipeline makes them."""
    say(api, owner, "My brother Hendrik lives in Zwolle.", "I work at Acme.", "I'll send the spec to Marcel by Friday.")
    say(api, owner, "My brother Henk lives in Deventer.", "Henk works at Acme.", conversation="later")
    return Node.objects.get(label="Hendrik"), Node.objects.get(label="Henk")


def owner_user(persona: Persona) -> User:
    assert persona.user is not None
    return persona.user


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_owner_finds_an_entity_and_follows_the_graph(page, live_server, api: Api, owner: Persona) -> None:
    hendrik, _ = brothers(api, owner)
    zwolle = Node.objects.get(label="Zwolle")
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/entities/")
    listed = page.inner_text("#entities")
    for label in ("Hendrik", "Henk", "Zwolle", "Deventer", "Acme", "Marcel", "Send the spec to Marcel"):
        assert label in listed, label
    assert "alice" not in listed  # the self node is not one of the entities
    screenshots(page, "ui-entities-list")

    page.get_by_label("Name or alias").fill("henk")
    page.get_by_role("button", name="Find").click()
    page.wait_for_url("**/ui/entities/?q=henk*")
    assert [a.inner_text() for a in page.locator("#entities .entity-name").all()] == ["Henk"]
    page.goto(f"{live_server.url}/ui/entities/")
    page.get_by_label("Type").select_option(label="place")
    page.get_by_role("button", name="Find").click()
    page.wait_for_url("**/ui/entities/?*type=Place*")
    assert sorted(a.inner_text() for a in page.locator("#entities .entity-name").all()) == ["Deventer", "Zwolle"]

    page.goto(f"{live_server.url}/ui/entities/")
    page.get_by_role("link", name="Hendrik", exact=True).click()
    page.wait_for_url(f"**/ui/entities/{hendrik.pk}/")
    assert "Hendrik lives in Zwolle." in page.inner_text("#claims-subject")
    assert "Hendrik is the user's brother." in page.inner_text("#claims-object")
    assert "Hendrik is the user's brother." not in page.inner_text("#claims-subject")
    neighbours, _ = node_neighborhood(access_for_user(user=owner_user(owner)), hendrik)
    assert len(neighbours) == 2  # the owner and Zwolle
    expect(page.locator("#graph svg")).to_be_visible()
    assert page.locator("#graph svg .gnode").count() == len(neighbours) + 1
    assert page.locator("#graph svg .glink").count() == len(neighbours)
    screenshots(page, "ui-entity-page")
    page.locator(f'#graph svg a.gnode[data-id="{zwolle.pk}"]').click()
    page.wait_for_url(f"**/ui/entities/{zwolle.pk}/")
    assert page.inner_text("#entity-name").startswith("Zwolle")
    assert page.locator("#graph svg .gnode").count() == 2  # Zwolle and Hendrik


def test_without_script_the_neighbours_are_a_list_of_links(browser, live_server, api: Api, owner: Persona) -> None:
    hendrik, _ = brothers(api, owner)
    zwolle = Node.objects.get(label="Zwolle")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in_as(page, live_server, owner.user)
        page.goto(f"{live_server.url}/ui/entities/{hendrik.pk}/")
        assert page.locator("#graph svg").count() == 0
        page.locator("#neighbours").get_by_role("link", name="Zwolle").click()
        page.wait_for_url(f"**/ui/entities/{zwolle.pk}/")
    finally:
        context.close()


def test_merge_shows_what_moves_then_moves_it(page, live_server, api: Api, owner: Persona) -> None:
    hendrik, henk = brothers(api, owner)
    henks = set(Claim.objects.filter(subject=henk).values_list("pk", flat=True))
    henks |= set(Claim.objects.filter(object_node=henk).values_list("pk", flat=True))
    expected = node_merge(access=access_for_user(user=owner_user(owner)), source_id=henk.pk, target_id=hendrik.pk)
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/entities/{henk.pk}/")
    page.get_by_role("link", name="Merge into…").click()
    page.wait_for_url(f"**/ui/entities/{henk.pk}/merge")
    candidates = page.locator("#candidates")
    assert "Hendrik" in candidates.inner_text() and "Zwolle" not in candidates.inner_text()  # people only
    page.get_by_label("Find the other person").fill("Hendr")
    expect(page.locator("#candidates li")).to_have_count(1)
    screenshots(page, "ui-entity-merge-pick")
    page.get_by_role("link", name="Preview merging into Hendrik").click()
    page.wait_for_url(f"**/ui/entities/{henk.pk}/merge?target={hendrik.pk}")
    assert page.inner_text("#move-claims") == str(expected.claims) == str(len(henks))
    assert page.inner_text("#move-aliases") == str(expected.aliases) == "2"  # "Henk" and its own label
    assert page.inner_text("#move-evidence") == str(expected.evidence) == "3"
    assert Claim.objects.filter(subject=henk).exists()  # the preview moved nothing
    screenshots(page, "ui-entity-merge-preview")

    page.get_by_role("button", name="Merge into Hendrik").click()
    page.wait_for_url(f"**/ui/entities/{hendrik.pk}/")
    assert "Merged “Henk” into “Hendrik”" in page.inner_text(".messages")
    moved = Claim.objects.filter(pk__in=henks)
    assert all(hendrik.pk in (c.subject_id, c.object_node_id) for c in moved) and moved.count() == len(henks)
    assert "Henk works at Acme." in page.inner_text("#claims-subject")
    assert "Henk" in page.inner_text("#aliases")
    assert Alias.objects.filter(node=hendrik, name="Henk").exists()
    response = page.goto(f"{live_server.url}/ui/entities/{henk.pk}/")
    assert response is not None and response.url.endswith(f"/ui/entities/{hendrik.pk}/")
    assert "was merged into “Hendrik”" in page.inner_text(".messages")
    assert page.goto(f"{live_server.url}/ui/entities/{henk.pk}/merge").url.endswith(f"/{hendrik.pk}/")


def test_names_can_be_added_removed_and_changed(page, live_server, api: Api, owner: Persona) -> None:
    hendrik, _ = brothers(api, owner)
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/entities/{hendrik.pk}/")
    assert "No other names." in page.inner_text("#aliases")  # its own label is not listed as another name
    page.get_by_label("Add a name").fill("Hennie")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.locator("#aliases")).to_contain_text("Hennie")
    assert Alias.objects.filter(node=hendrik, name="Hennie").exists()
    page.get_by_role("button", name="Remove Hennie").click()
    expect(page.locator("#aliases")).not_to_contain_text("Hennie")
    assert not Alias.objects.filter(node=hendrik, name="Hennie").exists()

    page.get_by_label("Name", exact=True).fill("Hendrik de Vries")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#entity-name")).to_contain_text("Hendrik de Vries")
    assert Node.objects.get(pk=hendrik.pk).label == "Hendrik de Vries"
    assert "Hendrik" in page.inner_text("#aliases")  # the old name is still recognised
    page.get_by_label("Name", exact=True).fill("   ")
    page.get_by_label("Name", exact=True).evaluate("input => input.form.submit()")  # past the browser's check
    expect(page.locator(".messages")).to_contain_text("A label cannot be empty.")
    assert Node.objects.get(pk=hendrik.pk).label == "Hendrik de Vries"


def test_delete_asks_first_says_what_goes_and_then_it_is_gone(page, live_server, api: Api, owner: Persona) -> None:
    hendrik, henk = brothers(api, owner)
    statements = set(Claim.objects.filter(subject=henk).values_list("statement", flat=True))
    statements |= set(Claim.objects.filter(object_node=henk).values_list("statement", flat=True))
    sign_in_as(page, live_server, owner.user)
    page.goto(f"{live_server.url}/ui/entities/{henk.pk}/")
    page.get_by_role("link", name="Delete…").click()
    page.wait_for_url(f"**/ui/entities/{henk.pk}/delete")
    assert {li.inner_text().split(" active ·")[0] for li in page.locator("#doomed li").all()} == statements
    assert "3 claims" in page.inner_text("#delete") and "Hendrik lives in Zwolle." not in page.inner_text("#doomed")
    assert Node.objects.filter(pk=henk.pk).exists()  # asking removed nothing
    screenshots(page, "ui-entity-delete")
    page.get_by_role("button", name="Delete Henk").click()
    page.wait_for_url("**/ui/entities/")
    assert "Deleted, with 3 claims about it." in page.inner_text(".messages")
    assert not Node.objects.filter(pk=henk.pk).exists()
    assert not Claim.objects.filter(statement__in=statements).exists()
    assert Claim.objects.filter(subject=hendrik, statement="Hendrik lives in Zwolle.").exists()
    assert page.goto(f"{live_server.url}/ui/entities/{henk.pk}/").status == 404
    me = Node.objects.get(owner=owner.user, is_self=True)
    client = signed_in(owner.user)
    refused = client.get(f"/ui/entities/{me.pk}/delete", follow=True)
    assert "The self node cannot be deleted." in refused.content.decode()


def test_pages_follow_each_other_and_a_bad_cursor_is_explained(api: Api, owner: Persona) -> None:
    brothers(api, owner)
    NodeFactory.create_batch(30, owner=owner.user, type="Person")
    client = signed_in(owner.user)
    seen: list[str] = []
    response = client.get("/ui/entities/", {"type": "Person"})
    while True:
        seen += [node.pk for node in response.context["entities"]]
        cursor = response.context["next_cursor"]
        if not cursor:
            break
        assert "Next page" in response.content.decode()
        response = client.get("/ui/entities/", {"type": "Person", "cursor": cursor})
    people = Node.objects.filter(owner=owner.user, type="Person", merged_into__isnull=True)
    assert len(seen) == len(set(seen)) == people.count() > 25
    broken = client.get("/ui/entities/", {"cursor": "not-a-cursor"})
    assert broken.status_code == 200 and "The cursor is not valid." in broken.content.decode()


def object_urls(node: Node, target: Node) -> tuple[list[str], list[tuple[str, dict[str, str]]]]:
    base = f"/ui/entities/{node.pk}/"
    pages = [base, f"{base}merge", f"{base}merge?target={target.pk}", f"{base}delete"]
    forms = [
        (f"{base}rename", {"label": "Mine now"}),
        (f"{base}aliases/add", {"name": "Mine"}),
        (f"{base}aliases/remove", {"name": node.label}),
        (f"{base}merge", {"target": target.pk}),
        (f"{base}delete", {}),
    ]
    return pages, forms


def test_another_person_gets_404_on_every_entity_url(api: Api, owner: Persona) -> None:
    hendrik, henk = brothers(api, owner)
    mallory = signed_in(UserFactory.create(username="mallory"))
    pages, forms = object_urls(henk, hendrik)
    for path in pages:
        assert mallory.get(path).status_code == 404, path
    for path, data in forms:
        assert mallory.post(path, data).status_code == 404, path
    theirs = Node.objects.get(pk=henk.pk)
    assert (theirs.label, theirs.merged_into_id) == ("Henk", None)
    assert Claim.objects.filter(subject=henk).count() == 2 and Alias.objects.filter(node=henk).count() == 1
    # Nor can the owner reach someone else's entity as a merge target.
    stranger = NodeFactory.create(type="Person", label="Hendrik")
    owner_client = signed_in(owner.user)
    assert owner_client.get(f"/ui/entities/{henk.pk}/merge?target={stranger.pk}").status_code == 404
    assert owner_client.post(f"/ui/entities/{henk.pk}/merge", {"target": stranger.pk}).status_code == 404


def test_signed_out_visitors_are_sent_to_sign_in_and_forms_need_csrf(api: Api, owner: Persona) -> None:
    hendrik, henk = brothers(api, owner)
    anonymous = Client()
    pages, forms = object_urls(henk, hendrik)
    for path in ["/ui/entities/", *pages]:
        response = anonymous.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path
    for path, data in forms:
        response = anonymous.post(path, data)
        assert response.status_code in (302, 403), path
        assert post_without_csrf(owner.user, path, data) == 403, path
    theirs = Node.objects.get(pk=henk.pk)
    assert (theirs.label, theirs.merged_into_id) == ("Henk", None)
    assert not Alias.objects.filter(name="Mine").exists()


def test_a_refused_merge_says_why_and_moves_nothing(api: Api, owner: Persona) -> None:
    hendrik, _ = brothers(api, owner)
    apollo = PartitionFactory.create(owner=owner.user, key="project:apollo")
    elsewhere = NodeFactory.create(owner=owner.user, partition=apollo, type="Person", label="Hendrik")
    client = signed_in(owner.user)
    client.post("/ui/partition", {"partition": "*"})
    response = client.post(f"/ui/entities/{elsewhere.pk}/merge", {"target": hendrik.pk})
    assert response.status_code == 302 and response["Location"] == f"/ui/entities/{elsewhere.pk}/merge"
    shown = client.get(response["Location"]).content.decode()
    assert "Nodes of different partitions cannot be merged." in shown
    assert Node.objects.get(pk=elsewhere.pk).merged_into_id is None
    me = Node.objects.get(owner=owner.user, is_self=True, partition__key="memory:personal")
    own_page = client.get(f"/ui/entities/{me.pk}/").content.decode()
    assert "Merge into…" not in own_page and "Delete…" not in own_page  # the self node stays
