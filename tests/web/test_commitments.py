"""/ui/commitments/, the board, with real data from the pipeline: conversations said some days ago and today
(so one task is overdue, one due today, some upcoming, some undated), a task in another partition and
candidates from a document. Every decision is one click and one call to commitments/services.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from memory.models import Claim, Node, Scope, Source, User
from memory.pipeline.runner import run_operation
from tests.conftest import Api, Persona, issue
from tests.factories import PartitionFactory, UserFactory
from tests.web.conftest import post_without_csrf, screenshots, sign_in_as

pytestmark = pytest.mark.django_db(transaction=True)
browser = pytest.mark.browser

BOARD = "/ui/commitments/"
ACTIONS = ("complete", "abandon", "reschedule", "confirm", "dismiss")


@dataclass
class Memory:
    owner: Persona
    spec: Node  # overdue, names Marcel
    venue: Node  # due today
    drill: Node  # upcoming, Hugo's
    anna: Node  # upcoming, names Anna
    passport: Node  # undated
    caterer: Node  # upcoming, in project:apollo
    slides: Node  # candidate
    cards: Node  # candidate
    today: date

    @property
    def user(self) -> User:
        assert self.owner.user is not None
        return self.owner.user


def talk(api: Api, persona: Persona, chat: str, text: str, when: datetime, partition: str = "") -> None:
    body: dict[str, Any] = {"conversation": {"id": chat, "messages": [
        {"id": f"{chat}-1", "role": "user", "content": text, "timestamp": when.isoformat()},
    ]}}  # fmt: skip
    if partition:
        body["partitionKey"] = partition
    receipt = api.post("/ingest/conversation", persona, body)
    assert receipt.status_code == 202, receipt.content
    run_operation(receipt.json()["operationId"])


def task(label: str) -> Node:
    return Node.objects.get(type="Task", label=label)


def build(username: str = "alice") -> Memory:
    owner = issue(UserFactory.create(username=username), "owner", scopes=Scope.values)
    PartitionFactory.create(owner=owner.user, key="project:apollo", label="Apollo")
    api = Api(Client())
    now = datetime.now(UTC)
    talk(api, owner, "spec", "I'll send the spec to Marcel by Friday.", now - timedelta(days=10))
    talk(api, owner, "venue", "I need to book the venue today.", now)
    talk(api, owner, "drill", "Hugo promised to return the drill tomorrow.", now)
    talk(api, owner, "anna", "I'll call Anna about the budget in 3 days.", now)
    talk(api, owner, "passport", "I'll renew the passport.", now)
    talk(api, owner, "caterer", "I need to book the caterer by Friday.", now, partition="project:apollo")
    notes = "Notes from Monday.\n\nI will send the slides to Ingrid by Friday.\n\nI will order new business cards."
    receipt = api.post("/ingest/document", owner, {"document": {"id": "notes", "timestamp": now.isoformat(),
                                                                 "content": notes}})  # fmt: skip
    run_operation(receipt.json()["operationId"])
    return Memory(
        owner=owner, spec=task("Send the spec to Marcel"), venue=task("Book the venue"), drill=task("Return the drill"),
        anna=task("Call Anna about the budget"), passport=task("Renew the passport"), caterer=task("Book the caterer"),
        slides=task("Send the slides to Ingrid"), cards=task("Order new business cards"), today=now.date(),
    )  # fmt: skip


@pytest.fixture
def memory() -> Memory:
    return build()


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def column_labels(page: Any, column: str) -> list[str]:
    return page.locator(f"#{column} .task-label").all_inner_texts()


def open_board(page: Any, live_server: Any, memory: Memory, query: str = "") -> None:
    sign_in_as(page, live_server, memory.user)
    page.goto(f"{live_server.url}{BOARD}{query}")


def click(page: Any, card: Node, button: str) -> None:
    with page.expect_navigation():
        page.locator(f"#task-{card.pk}").get_by_role("button", name=button).click()


def current(node: Node, predicate: str) -> Claim:
    return Claim.objects.get(subject=node, predicate=predicate, status="active")


def open_labels(memory: Memory) -> list[str]:
    answer = Api(Client()).post("/commitments/open", memory.owner, {}).json()
    return sorted(item["label"] for item in answer["commitments"])


# The board


@browser
def test_the_board_shows_each_task_in_its_column_with_its_card(page: Any, live_server: Any, memory: Memory) -> None:
    open_board(page, live_server, memory)
    assert column_labels(page, "overdue") == ["Send the spec to Marcel"]
    assert column_labels(page, "dueToday") == ["Book the venue"]
    assert column_labels(page, "upcoming") == ["Return the drill", "Call Anna about the budget"]
    assert column_labels(page, "undated") == ["Renew the passport"]
    assert page.locator(f"#task-{memory.caterer.pk}").count() == 0  # another partition: not in this view
    assert sorted(page.locator("#candidates .task-label").all_inner_texts()) == [
        "Order new business cards", "Send the slides to Ingrid",
    ]  # fmt: skip
    spec = page.locator(f"#task-{memory.spec.pk}")
    due = date.fromisoformat(str(current(memory.spec, "DUE_ON").object_value))
    assert spec.locator("[data-role=due] time").inner_text() == f"{due:%a} {due.day} {due:%b %Y}"
    assert spec.locator("[data-role=status]").inner_text() == "pending"
    assert spec.locator("[data-role=owner]").inner_text() == "You"
    assert spec.locator("[data-role=mentions]").inner_text() == "Marcel"
    assert page.locator(f"#task-{memory.drill.pk} [data-role=owner]").inner_text() == "Hugo"
    assert "I'll send the spec to Marcel by Friday." in spec.locator(".excerpt").inner_text()
    assert page.locator("#today").get_attribute("datetime") == memory.today.isoformat()
    screenshots(page, "ui-commitments")
    conversation = Source.objects.get(kind="conversation", external_id="spec")
    with page.expect_navigation():
        spec.locator("[data-role=said]").click()
    assert page.url == f"{live_server.url}/ui/sources/{conversation.pk}/#message-spec-1"
    assert "I'll send the spec to Marcel by Friday." in page.locator("#message-spec-1").inner_text()


@browser
def test_the_workspace_view_shows_every_partition_and_filters_to_one(
    page: Any, live_server: Any, memory: Memory
) -> None:
    open_board(page, live_server, memory)
    with page.expect_navigation():
        page.locator("#partition-switch").select_option(label="All partitions")
    assert page.url.endswith(BOARD)
    assert sorted(column_labels(page, "upcoming")) == [
        "Book the caterer",
        "Call Anna about the budget",
        "Return the drill",
    ]
    assert "Apollo" in page.locator(f"#task-{memory.caterer.pk} .task-facts").inner_text()
    screenshots(page, "ui-commitments-workspace")
    page.locator("#f-partition").select_option(label="Apollo")
    with page.expect_navigation():
        page.get_by_role("button", name="Show").click()
    assert [column_labels(page, name) for name in ("overdue", "dueToday", "upcoming", "undated")] == [
        [], [], ["Book the caterer"], [],
    ]  # fmt: skip
    assert page.locator("#candidates .task-card").count() == 0


def test_the_owner_filter_shows_mine_a_persons_or_anyones(memory: Memory) -> None:
    client = signed_in(memory.user)

    def shown(owner: str) -> set[str]:
        board = client.get(BOARD, {"owner": owner}).context["board"]
        return {card.task.label for cards in board.columns.values() for card in cards}

    hugo = current(memory.drill, "OWNED_BY").object_node
    assert hugo is not None
    everyone = shown("anyone")
    assert shown("me") == everyone - {"Return the drill"}
    assert shown(hugo.pk) == {"Return the drill"}
    html = client.get(BOARD, {"owner": hugo.pk}).content.decode()
    assert f'<option value="{hugo.pk}" selected>Hugo</option>' in html


def test_today_is_the_persons_calendar_day(memory: Memory) -> None:
    """A task due on today's UTC date is due today in UTC, upcoming where the day has not begun (UTC-12) and
    overdue where it is over (UTC+14); at every hour at least one of those two differs from UTC."""
    client = signed_in(memory.user)
    venue_due = date.fromisoformat(str(current(memory.venue, "DUE_ON").object_value))

    def column_of_venue(zone: str) -> str:
        client.cookies["tz"] = zone
        board = client.get(BOARD).context["board"]
        (column,) = [name for name, cards in board.columns.items() if memory.venue.pk in {c.task.pk for c in cards}]
        return column

    expected = {}
    for zone in ("Etc/GMT+12", "Etc/GMT-14"):
        local = datetime.now(ZoneInfo(zone)).date()
        expected[zone] = "dueToday" if local == venue_due else "upcoming" if local < venue_due else "overdue"
        assert column_of_venue(zone) == expected[zone]
    assert set(expected.values()) != {"dueToday"}
    assert column_of_venue("UTC") == "dueToday"
    assert column_of_venue("../../etc/passwd") == "dueToday"  # not a zone: the server's own (UTC)


def test_a_zone_chosen_on_the_metric_page_is_the_boards_too(memory: Memory) -> None:
    """One time zone per person: a choice made on a metric page wins over the browser's cookie everywhere."""
    client = signed_in(memory.user)
    client.cookies["tz"] = "Etc/GMT+12"
    assert client.get(BOARD).context["zone"] == "Etc/GMT+12"
    client.get("/ui/metrics/", {"tz": "Pacific/Kiritimati"})  # chosen on a metrics page
    board = client.get(BOARD)
    assert (board.context["zone"], board.context["zone_chosen"]) == ("Pacific/Kiritimati", True)
    assert "data-zone-chosen" in board.content.decode()


@browser
def test_the_browser_tells_the_board_its_time_zone(browser: Any, live_server: Any, memory: Memory) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, timezone_id="Pacific/Kiritimati")
    page = context.new_page()
    try:
        open_board(page, live_server, memory)
        page.wait_for_selector("[data-zone='Pacific/Kiritimati']")
        local = datetime.now(ZoneInfo("Pacific/Kiritimati")).date()
        assert page.locator("#today").get_attribute("datetime") == local.isoformat()
    finally:
        context.close()


# Decisions


@browser
def test_complete_takes_the_task_off_the_board_and_out_of_open_work(
    page: Any, live_server: Any, memory: Memory
) -> None:
    assert "Send the spec to Marcel" in open_labels(memory)
    open_board(page, live_server, memory)
    click(page, memory.spec, "Complete")
    assert page.locator(".messages").inner_text() == "Completed “Send the spec to Marcel”: it left the board."
    assert page.locator(f"#task-{memory.spec.pk}").count() == 0
    assert column_labels(page, "overdue") == []
    status = current(memory.spec, "HAS_TASK_STATUS")
    assert (status.object_value, status.origin) == ("completed", "manual")
    assert "Send the spec to Marcel" not in open_labels(memory)
    assert Claim.objects.filter(subject=memory.spec, predicate="HAS_TASK_STATUS", status="active").count() == 1
    screenshots(page, "ui-commitments-after-complete")


@browser
def test_abandon_takes_the_task_off_the_board(page: Any, live_server: Any, memory: Memory) -> None:
    open_board(page, live_server, memory)
    click(page, memory.passport, "Abandon")
    assert page.locator(f"#task-{memory.passport.pk}").count() == 0
    assert current(memory.passport, "HAS_TASK_STATUS").object_value == "abandoned"
    assert "Renew the passport" not in open_labels(memory)


@browser
def test_reschedule_makes_a_manual_due_date_and_moves_the_card(page: Any, live_server: Any, memory: Memory) -> None:
    open_board(page, live_server, memory, "?owner=me")
    card = page.locator(f"#task-{memory.passport.pk}")
    card.locator("summary", has_text="Reschedule").click()
    card.get_by_label("New due date").fill(memory.today.isoformat())
    screenshots(page, "ui-commitments-reschedule")  # the open date form fits a phone too
    with page.expect_navigation():
        card.get_by_role("button", name="Save date").click()
    assert page.url.endswith(f"{BOARD}?owner=me")  # the filters are kept
    assert "Rescheduled" in page.locator(".messages").inner_text()
    assert column_labels(page, "undated") == []
    assert column_labels(page, "dueToday") == ["Book the venue", "Renew the passport"]
    due = current(memory.passport, "DUE_ON")
    assert (due.object_value, due.origin) == (memory.today.isoformat(), "manual")
    later = memory.today + timedelta(days=20)
    card = page.locator(f"#task-{memory.spec.pk}")
    card.locator("summary", has_text="Reschedule").click()
    card.get_by_label("New due date").fill(later.isoformat())
    with page.expect_navigation():
        card.get_by_role("button", name="Save date").click()
    assert column_labels(page, "overdue") == []
    assert column_labels(page, "upcoming")[-1] == "Send the spec to Marcel"
    assert current(memory.spec, "DUE_ON").object_value == later.isoformat()


def test_a_reschedule_without_a_date_says_so_and_writes_nothing(memory: Memory) -> None:
    client = signed_in(memory.user)
    response = client.post(f"{BOARD}{memory.passport.pk}/reschedule", {"due_on": "next week"}, follow=True)
    assert "Pick the date" in response.content.decode()
    response = client.post(f"{BOARD}{memory.passport.pk}/reschedule", {"due_on": "3026-01-01"}, follow=True)
    assert "out of range" in response.content.decode()
    assert not Claim.objects.filter(subject=memory.passport, predicate="DUE_ON").exists()


@browser
def test_confirm_and_dismiss_candidates(page: Any, live_server: Any, memory: Memory) -> None:
    open_board(page, live_server, memory)
    screenshots(page, "ui-commitments-candidates")
    click(page, memory.slides, "Confirm")
    assert page.locator(f"#candidates #task-{memory.slides.pk}").count() == 0
    assert page.locator(f"#upcoming #task-{memory.slides.pk}").count() == 1  # due Friday: on the board now
    assert "Send the slides to Ingrid" in open_labels(memory)
    assert "Confirmed “Send the slides to Ingrid”" in page.locator(".messages").inner_text()
    click(page, memory.cards, "Dismiss")
    assert "Dismissed “Order new business cards”" in page.locator(".messages").inner_text()
    assert page.locator(f"#task-{memory.cards.pk}").count() == 0
    assert not Claim.objects.filter(subject=memory.cards, predicate="HAS_TASK_STATUS", status="active").exists()
    assert page.locator("#candidates .empty").inner_text() == "Nothing waiting to be confirmed."


# Who may do what


def test_another_person_gets_404_on_every_task_action_and_sees_none_of_the_tasks(memory: Memory) -> None:
    bob = signed_in(UserFactory.create(username="bob"))
    for node in (memory.spec, memory.slides):
        for action in ACTIONS:
            response = bob.post(f"{BOARD}{node.pk}/{action}", {"due_on": "2026-12-24"})
            assert response.status_code == 404, (action, response.status_code)
    assert current(memory.spec, "HAS_TASK_STATUS").object_value == "pending"
    assert current(memory.slides, "HAS_TASK_STATUS").origin == "imported"
    assert current(memory.spec, "DUE_ON").origin == "user_stated"
    page = bob.get(BOARD)
    assert page.status_code == 200
    assert "Send the spec" not in page.content.decode() and "slides" not in page.content.decode()


def test_a_signed_out_visitor_is_sent_to_sign_in(memory: Memory) -> None:
    client = Client()
    for method, path in [("get", BOARD)] + [("post", f"{BOARD}{memory.spec.pk}/{a}") for a in ACTIONS]:
        response = getattr(client, method)(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path
    assert current(memory.spec, "HAS_TASK_STATUS").object_value == "pending"


def test_every_form_refuses_a_post_without_csrf(memory: Memory) -> None:
    for action in ACTIONS:
        status = post_without_csrf(memory.user, f"{BOARD}{memory.slides.pk}/{action}", {"due_on": "2026-12-24"})
        assert status == 403, action
    assert current(memory.slides, "HAS_TASK_STATUS").origin == "imported"
    assert not Claim.objects.filter(subject=memory.slides, predicate="DUE_ON", origin="manual").exists()
