"""Commitments in the owner's sentences, clause by clause: what they will do and by when (their own task, even
when it names a recipient: "I'll send the spec to Marcel" is theirs, Marcel a linked person); what someone
else promised (that person owns it); what was done, called off or moved to another day (reconcile matches
those to an open task); removal of a deadline. English and Dutch."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date

from memory.extraction.base import EvidenceRef, Extraction, NodeRef, TaskCandidate
from memory.extraction.dates import find_day, removes_deadline
from memory.extraction.wording import NAME, NOT_NAMES, clean, sentence_case

_I = re.IGNORECASE
# Capitalised words that start sentences or name days and months, never a person.
NOT_PEOPLE = NOT_NAMES | {
    "Morgen", "Vandaag", "Maandag", "Dinsdag", "Woensdag", "Donderdag", "Vrijdag", "Zaterdag", "Zondag",
    "Ik", "De", "Het", "Een", "Mijn", "Maybe", "Then", "After", "Update", "Change", "Please", "Yes", "No",
}  # fmt: skip
SELF = re.compile(
    r"\b(?:I'll|I will|I'm going to|I am going to|I have to|I've got to|I've gotta|I got to|I gotta|I need to|I must|"
    r"I promised to|I'm supposed to|I'm meant to|I'm expected to|I(?:'m| am) planning to|I plan to|I intend to|"
    r"I(?:'m| am) gonna|I(?:'ve| have) been asked to|I was asked to|I should(?! have\b)|I ought to|I'd better|"
    r"I had better|we need to|we have to|"
    r"we must|we should(?! have\b)|ik zal|ik ga|ik moet|ik beloof(?: om| te)?|we moeten|"
    r"I(?:'ve| have)? (?:promised|told)(?: (?:the|my|our) [a-z]+| [A-Z][a-z]+| him| her| them)? "
    r"(?:to|I'd|I would|that I'd|that I would)|"
    # An adverb between "I" and the modal: "I really need to", "I still have to".
    r"I (?:really|still|just|definitely|absolutely|urgently|seriously|also|finally|probably|desperately) "
    r"(?:need to|have to|must|should(?! have\b)|ought to|want to)|"
    # Asked of the owner by someone else: still the owner's to do ("My manager asked me to ...").
    r"(?<!\bI )(?<!\bwe )(?:asked|asks|told|tells|wants|needs|reminded) me to|"
    r"(?:heeft|hebben) me (?:gevraagd|verzocht)(?: om| te)?|vroeg me(?: om| te)?)\s+"
    # Notes to self drop the subject: "Gotta pick up the dry cleaning", "Need to call the bank".
    r"|^\W*(?:gotta|got to|need to|have to|must)\s+",
    _I,
)
# Someone else's promise, not their plan: "Kees is going to sell his van" is not a task of the owner's.
OTHER = re.compile(
    NAME + r"(?:,\s[^,]{1,40},)?\s+(?:will|has promised to|promised to|has agreed to|agreed to|offered to|"
    r"(?:said|promised)(?: that)? (?:she|he|they)(?:'d| would| will)|zegt dat (?:ze|hij|zij)|zal|"
    r"belooft(?: om| te| dat (?:ze|hij|zij))?|"
    r"heeft (?:beloofd|toegezegd)(?: om| te| dat (?:ze|hij|zij))?)\s+"
)
# "Is going to" / "gaat" is a plan, mostly for one's own life ("Kees is going to sell his van"); it is a task
# for the owner's world when it is a service around a thing they share: "Joost gaat de verhuiswagen regelen".
OTHER_PLAN = re.compile(NAME + r"(?:,\s[^,]{1,40},)?\s+(?:is going to|gaat)\s+")
SERVICE = re.compile(
    r"\b(?:regelen|organiseren|fixen|repareren|maken|ophalen|halen|brengen|sturen|bellen|nakijken|checken|"
    r"controleren|betalen|boeken|kopen|bestellen|mailen|delen|printen|voorbereiden|schrijven|tekenen|afleveren|"
    r"terugbrengen|lenen|installeren|schoonmaken|koken|bakken|take care of|sort out|arrange|organi[sz]e|handle|"
    r"pick up|fix|repair|bring|send|book|buy|order|check|call|email|mail|share|print|prepare|write|draft|review|"
    r"sign|deliver|drop off|return|lend|collect|install|clean|cook|bake|make)\b",
    _I,
)
SHARED_THING = re.compile(r"\b(?:the|those|us|me|de|het|die|dat|ons|me|mij)\b", _I)
OWN_THING = re.compile(r"\b(?:his|her|their|own|zijn|haar|hun|eigen)\b", _I)
# What must happen to the owner's things is theirs to arrange: "My car needs to be serviced by Thursday",
# "De dakgoot moet vrijdag schoongemaakt worden".
_PARTICIPLE = r"(?:[a-z]+ed|[a-z]+en|done|paid|sent|sold|built|cut|put|set|made|brought|bought|kept|left|hung|swept)"
NEEDS_DOING = re.compile(
    r"(?:^\W*|\b)(?:my|our|the|mijn|onze|de|het)\s+(?=[\w-]+(?:\s+[\w-]+){0,3}?\s+"
    r"(?:(?:needs|need|has|have)\s+to\s+be\s+" + _PARTICIPLE + r"\b|moet(?:en)?\s.+\s(?:worden|gebeuren)\b))",
    _I,
)
REMIND = re.compile(r"\b(?:remind me to|(?:don't|do not) forget to|vergeet niet(?: om)?|herinner me eraan om)\s+", _I)
TODO = re.compile(r"^\s*(?:TODO|to-do|action item|actiepunt|note to self|reminder|herinnering)\s*[:\-]\s*", _I)
ASK = re.compile(r"^\s*(?=(?i:ask|vraag)\s+" + NAME + r"\s+(?:to|om|of)\b)")
# Dutch speaks of the future in the present tense: "Morgen bel ik de garage", "Ik stuur het vrijdag".
# With a day these say what the owner will do: "Let me book the tickets tonight", "I want to finish it by Friday",
# "Tomorrow I'm calling the plumber" (the present progressive of a plan); without one they are chatter or wishes.
DATED = re.compile(
    r"\b(?:let me(?! know\b)|I want to|I'd like to|I would like to|ik wil(?: graag)?|"
    r"I(?:'m| am) (?=(?:calling|phoning|ringing|emailing|mailing|texting|sending|booking|collecting|picking|dropping|"
    r"paying|submitting|returning|fixing|repairing|renewing|signing|filing|delivering|handing|posting|ordering|"
    r"buying|taking|seeing|visiting|cancelling|canceling|finishing|sorting)\b))\s*",
    _I,
)
NL_INVERTED = re.compile(r"^\s*\w+(?:\s+\w+){0,2}\s+(?P<verb>[a-z]+)\s+ik\s+", _I)
NL_PRESENT = re.compile(r"\bik\s+(?P<verb>[a-z]+)\s+", _I)
NOT_NL_TASK_VERBS = {
    "ben", "heb", "had", "was", "werd", "woon", "werk", "vind", "denk", "twijfel", "weet", "hoop", "zou", "kan",
    "wil", "moet", "zal", "ga", "kon", "mag", "voel", "hou", "houd", "sliep", "liep", "woog", "heet", "blijf",
    "zie", "spreek", "kom", "eet", "slaap", "sta", "zit", "lig", "reis", "vertrek", "vlieg",
}  # fmt: skip
LEADING = re.compile(
    r"^(?:(?:try to|that|dat(?: ik| we)?|also|definitely|probably|first|still|just|really|then|proberen (?:om|te)|"
    r"ook|nog|eerst|even)\s+)+",
    _I,
)
STATE = re.compile(r"^(?:be|zijn)\b", _I)
# Manners of speaking and resolutions, not things to track: "I'll think about it", "I have to say, ...",
# "I must admit ...", "I'll keep that in mind", "I should exercise more", "we should grab coffee sometime".
NOT_A_TASK = re.compile(
    r"^(?:think(?: about| it over)?|consider|see (?:how|if|whether|what)|keep (?:that|it|this) in mind|"
    r"let (?:you|u|je) know|admit|love|hate|mention|get going|get moving|go now|point out|"
    r"say\b(?!\s+(?:goodbye|bye|hi|hello|thanks|thank))|guess|suppose|wonder|hope|"
    r"(?:erover |er over )?nadenken|zeggen|toegeven|bedenken|laat het (?:je|u) weten|kwijt|lekker|gezellig)\b|"
    r"\b(?:more|less|sometime|some time|someday|one day|meer|minder|ooit)$|\b(?:more often|vaker)\b|"
    r"^(?:drink|eat|sleep|exercise|walk|run|read|relax|rest|move|stretch|meditate|drinken|eten|slapen|sporten|"
    r"bewegen|lezen)\b.*\b(?:more|less|meer|minder)\b",
    _I,
)
# Another person's plan for their own life ("Kees will move to Spain") is not a commitment to the owner.
OWN_LIFE = re.compile(
    r"^(?:go|move|travel|retire|leave|stay|come|fly|quit|run|race|compete|participate|take part|visit|learn|study|"
    r"celebrate|marry|get married|graduate|gaan|verhuizen|reizen|vertrekken|blijven|komen|stoppen|lopen|meedoen|"
    r"deelnemen|leren|studeren|trouwen|vieren|afstuderen)\b",
    _I,
)
# A hedged or conditional commitment is not one yet ("Maybe I'll repaint the shed", "If it rains, I'll ...").
HEDGE = re.compile(r"^\s*(?:maybe|perhaps|possibly|if|unless|misschien|wellicht|als|tenzij)\b", _I)
BOUNDARY = re.compile(
    r",\s*(?:and then|then|so|because|since|which|but|maar|want|dus|zodat|dan|en dan|omdat|"
    r"we|I|he|she|they|it|you|ik|ze|hij|zij|het)\b|\s+(?:because|so that|omdat|zodat)\s+|[;:]\s|\s+-\s",
    _I,
)
# What is left dangling once the day is cut out ("book the restaurant for [Saturday]") is no part of a label.
TRAILING = re.compile(r"(?:\s+(?:anymore|any more|meer|and|en|this (?:morning|afternoon|evening|week)|"
                      r"today|yesterday|vandaag|gisteren|vanochtend|vanmiddag|vanavond|"
                      r"for|on|by|before|until|till|at|voor|op|tegen|uiterlijk))+$", _I)  # fmt: skip
# "to" and "naar" lead to places as often as to people ("drive to Paris"); people.py knows who is sent things.
PERSON_AFTER = re.compile(
    r"\b(?i:with|for|ask|tell|remind|call|email|mail|phone|text|meet|send|give|met|vraag|vragen|"
    r"bel|stuur|geef|spreek|voor|bij|promised|told|beloofd)\s+" + NAME + r"\b"
)
PERSON_BEFORE = re.compile(r"\b" + NAME + r"\s+(?:vragen|bellen|mailen|appen|spreken|laten weten)\b")  # Dutch verb-last
_PAST = (
    r"sent(?: over| off)?|finished|completed|submitted|delivered|paid|called|emailed|booked|fixed|done|wrote|"
    r"written|reviewed|shipped|signed|renewed|handed in|filed|returned|checked|prepared|drafted|cancelled"
)
DONE = re.compile(
    r"\b(?P<who>I|" + NAME.replace("?P<name>", "") + r")(?:'ve| has| have)?\s+(?:just\s+|already\s+|finally\s+)?"
    r"(?P<verb>" + _PAST + r")\b(?P<post>.*)"
)
# "Done with the library books", "I'm finished with the slides", "klaar met de aangifte".
DONE_WITH = re.compile(
    r"(?:^\W*|\b(?:I'm|I am|we're|we are|ik ben|we zijn)\s+(?:now\s+|finally\s+|eindelijk\s+|nu\s+)?)"
    r"(?:all\s+)?(?:done|finished|through|klaar)\s+(?:with|met)\s+(?P<post>.+)",
    _I,
)
# Dutch fronts the thing done: "Het belastingformulier heb ik gisteren ingevuld".
DONE_NL_FRONTED = re.compile(
    r"^\W*(?P<pre>(?:de|het|die|dat|mijn|onze)\s+[^,:;]+?)\s+(?:heb ik|hebben we)\s+(?:\w+\s+){0,3}?"
    r"(?:verstuurd|gestuurd|opgestuurd|betaald|verlengd|ingeleverd|gedaan|geregeld|getekend|geboekt|afgerond|"
    r"ingediend|gebeld|gemaild|ingevuld|\w*ge\w+(?:[dt]|en)|(?:ver|be|ont|her)\w+(?:[dt]|en))(?:[,.;!]|$)",
    _I,
)
# A "pre" group is a whole clause before its keyword; anchoring it at the clause's start keeps the match the
# same and the search linear (unanchored, every position of a long clause was tried in turn).
DONE_PASSIVE = re.compile(
    r"(?:^|(?<=[,:;]))(?P<pre>[^,:;]+?)\s+(?:is|are|has been|have been|was|were|zijn|werd|is nu|zijn nu)\s+"
    r"(?:al\s+|now\s+|just\s+|already\s+|finally\s+|eindelijk\s+)?(?:sent|done|finished|paid|submitted|signed|"
    r"booked|fixed|renewed|handed in|delivered|sorted|verlengd|betaald|verstuurd|gestuurd|opgestuurd|ingeleverd|"
    r"gedaan|geregeld|getekend|geboekt|afgerond|klaar|ingediend|rondgestuurd)\b",
    _I,
)
DONE_NL = re.compile(
    r"\b(?:[Ii]k|" + NAME.replace("?P<name>", "") + r") (?:heb|heeft)\s+(?P<post>.+?)\s+(?:al\s+)?"
    r"(?:verstuurd|gestuurd|opgestuurd|betaald|verlengd|ingeleverd|gedaan|geregeld|getekend|geboekt|afgerond|"
    r"ingediend|gebeld|gemaild|rondgestuurd|\w*ge\w+[dt]|(?:ver|be|ont|her)\w+[dt])(?:[,.;!]|$)"
)
CANCELLED = re.compile(
    r"\b(?:no need to|(?:don't|do not|no longer|won't|will not) (?:need|have) to|"
    r"(?<=I )won't|(?<=I )will not|cancel(?:led)?|never mind|"
    r"(?<!n't )(?<!not )forget(?: about)?(?! to\b)|"
    r"(?:^|(?<=[,:;] ))(?:scrap|drop|skip)|laat maar(?: zitten)?(?: met)?)\s*[,:]?\s+(?P<post>.+)|"
    r"\blaat\s+(?P<post2>.+?)\s+maar\b|"
    # Dutch "hoeven" with "niet meer": "Ik hoef de visitekaartjes niet meer te bestellen".
    r"\b(?:ik|we|wij)\s+(?:hoef|hoeven)\s+(?P<post3>.+?)\s+niet\s+(?:meer\s+)?(?:te\s+)?|"
    r"(?:^|(?<=[,:;]))(?P<pre>[^,:;]+?)\s+(?:is|are|has been|have been|was|were|got|werd|wordt|is)\s+"
    r"(?:cancelled|canceled|called off|scrapped|off|geschrapt|afgezegd|geannuleerd)\b|"
    r"(?:^|(?<=[,:;]))(?P<pre2>[^,:;]+?)\s+(?:gaat niet door|hoeft niet meer|is van de baan)\b",
    _I,
)
RESCHEDULED = re.compile(
    r"(?:^|(?<=[,:;]))(?P<pre>[^,:;]+?)\s+(?:has been\s+|have been\s+|is\s+|was\s+|got\s+|are\s+|wordt\s+|werd\s+)?"
    r"(?:moved|pushed(?: back)?|postponed|rescheduled|delayed|shifted|extended|verschoven|verplaatst|uitgesteld|"
    r"verzet|verlengd)"
    r"\s+(?:to|until|till|naar|tot)\b|"
    r"\b(?:push|move|postpone|reschedule|verschuif|verplaats|verzet)(?:e?d)?\s+(?:back\s+)?(?P<post>.+?)(?:\s+back)?\s+"
    r"(?:to|until|naar|tot)\b|"
    r"(?:^|(?<=[,:;]))(?P<pre2>[^,:;]+?)\s+(?:is|are)\s+now\s+due\b|"
    r"\b(?:deadline|due date) (?:for|of|van|voor) (?P<post2>.+?)\s+(?:is now|is|moved|wordt|is nu)\b",
    _I,
)
CHANGE_TAIL = re.compile(
    r"\s+(?:gaat niet door|hoeft niet meer|is van de baan|(?:is|are|has been|was) (?:cancell?ed|called off|off))\b.*$",
    _I,
)
PRONOUN = re.compile(r"^(?:that|it|this|dat|het|dit|alles|everything)$", _I)


def find_tasks(sentence: str, evidence: EvidenceRef, today: date) -> Extraction:
    """Tasks in one sentence of the owner's: one per commitment, with owner and due date; completion,
    cancellation and rescheduling wording that reconcile matches to an open task; the people they name."""
    found = Extraction()
    if sentence.rstrip().endswith("?") and not REMIND.search(sentence):
        return found  # a question weighs options; it commits to nothing ("Can you remind me to ..." does)
    if change := _change(sentence, evidence, today):
        found.tasks.append(change)
        return found
    starts = [] if HEDGE.match(sentence) else _clause_starts(sentence)
    for index, (start, action_at, owner) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(sentence)
        window_start = 0 if index == 0 else start  # "Tomorrow I need to ...": the day before the subject
        task = _task(sentence, window_start, action_at, end, owner, evidence, today)
        if task is not None:
            named = _people(sentence[start:end])
            found.tasks.append(replace(task, people=tuple(dict.fromkeys(p for p in named if p != owner))))
            found.people.extend(named)
            if owner is not None:
                found.people.append(owner)
    if not starts and removes_deadline(sentence):
        # Removal wording about a task named elsewhere: reconcile matches it to an open task.
        found.tasks.append(TaskCandidate(label=sentence, evidence=evidence, due_removed=True))
    return found


def _clause_starts(sentence: str) -> list[tuple[int, int, NodeRef | None]]:
    """Where each commitment starts, where its action starts, and who owns it (None: the owner of the memory)."""
    starts: list[tuple[int, int, NodeRef | None]] = []
    for pattern in (TODO, REMIND, SELF, ASK, NEEDS_DOING):
        starts += [(match.start(), match.end(), None) for match in pattern.finditer(sentence)]
    for match in OTHER.finditer(sentence):
        if match["name"] not in NOT_PEOPLE:
            starts.append((match.start(), match.end(), NodeRef(type="Person", label=match["name"])))
    for match in OTHER_PLAN.finditer(sentence):
        action = BOUNDARY.split(sentence[match.end() :])[0]
        if (
            match["name"] not in NOT_PEOPLE and SERVICE.search(action) and SHARED_THING.search(action)
            and not OWN_THING.search(action)
        ):  # fmt: skip
            starts.append((match.start(), match.end(), NodeRef(type="Person", label=match["name"])))
    if not starts and find_day(sentence, date.min) is not None:
        starts += [(match.start(), match.end(), None) for match in DATED.finditer(sentence)]
    if not starts and find_day(sentence, date.min) is not None:
        for pattern in (NL_INVERTED, NL_PRESENT):
            present = pattern.search(sentence)
            if present and present["verb"].lower() not in NOT_NL_TASK_VERBS:
                starts.append((present.start(), present.start("verb"), None))
                break
    starts.sort(key=lambda item: item[0])
    # Overlaps ("I need to ask Ilse to ...") keep the first, outermost clause.
    kept: list[tuple[int, int, NodeRef | None]] = []
    for item in starts:
        if not kept or item[0] >= kept[-1][1]:
            kept.append(item)
    return kept


def _task(
    sentence: str, window_start: int, action_at: int, end: int, owner: NodeRef | None, evidence: EvidenceRef,
    today: date,
) -> TaskCandidate | None:  # fmt: skip
    action = sentence[action_at:end]
    if boundary := BOUNDARY.search(action):
        action = action[: boundary.start()]
        end = action_at + len(action)
    day = find_day(sentence[window_start:end], today)
    if day is not None and window_start + day.start >= action_at:
        cut = (window_start + day.start - action_at, window_start + day.end - action_at)
        action = action[: cut[0]] + action[cut[1] :]
    action = re.sub(r"^(\w+)\s+ik\s+", r"\1 ", action, flags=_I)  # "bel ik de garage": the verb, then its object
    # "(dat ik) de auto moet wegbrengen": the modal before a Dutch verb-last infinitive is no part of the task.
    action = re.sub(r"\s(?:moet|moeten|ga|gaan|zal|zullen|wil|willen)\s+(?=[a-z]+en\W*$)", " ", action)
    label = sentence_case(TRAILING.sub("", LEADING.sub("", clean(action))))
    if (
        len(label.split()) < 2 or STATE.match(label) or NOT_A_TASK.search(label)
        or (owner is not None and (OWN_LIFE.match(label) or OWN_LIFE.match(label.split()[-1])))  # Dutch: verb last
    ):  # fmt: skip
        return None  # "I'll manage", "I'll be in Berlin": no thing to track
    return TaskCandidate(
        label=label, evidence=evidence, owner=owner, due_on=day.day if day else None,
        due_removed=removes_deadline(sentence),
    )  # fmt: skip


def _people(text: str) -> list[NodeRef]:
    return [
        NodeRef(type="Person", label=match["name"])
        for pattern in (PERSON_AFTER, PERSON_BEFORE)
        for match in pattern.finditer(text)
        if match["name"] not in NOT_PEOPLE and match["name"][:1].isupper()
    ]


def _subject(match: re.Match[str]) -> str:
    """The thing a change is about: the clause next to its keyword (before it: "the demo moved to ...";
    after it: "never mind the slides, ..."), without fillers and time words."""
    groups = match.groupdict().items()
    name, text = next(((k, v) for k, v in groups if v and k.startswith(("pre", "post"))), ("post", ""))
    parts = re.split(r"[,:;]\s*|\s+-\s+", text)
    text = parts[-1] if name.startswith("pre") else parts[0]
    text = CHANGE_TAIL.sub("", text)
    text = re.sub(
        r"^(?:the\s+|de\s+)?(?:deadline|due date)\s+(?:for|of|van|voor)\s+", "", text.strip(), flags=_I
    )  # "laat maar, de verhuizing gaat niet door": the thing, not its fate
    text = BOUNDARY.split(text)[0]
    return TRAILING.sub("", clean(text))


def _change(sentence: str, evidence: EvidenceRef, today: date) -> TaskCandidate | None:
    """Completion, cancellation or a new day for an open task named in the sentence; not when the owner
    commits to it first ("I need to cancel the gym membership" is a new task)."""
    commit = min((m.start() for p in (TODO, REMIND, SELF) if (m := p.search(sentence))), default=len(sentence))
    if (match := RESCHEDULED.search(sentence)) and match.start() < commit:
        subject = _subject(match)
        day = find_day(sentence[match.end() :], today) or find_day(sentence[match.start() :], today)
        if subject and not PRONOUN.match(subject) and day is not None and day.day is not None:
            return TaskCandidate(label=subject, evidence=evidence, due_on=day.day, rescheduled=True)
    if (match := CANCELLED.search(sentence)) and match.start() < commit:
        subject = _subject(match)
        if subject and not PRONOUN.match(subject):
            return TaskCandidate(label=subject, evidence=evidence, status="abandoned")
    match = DONE.search(sentence)
    if match and match.start() < commit and (match["who"] == "I" or match["who"] not in NOT_PEOPLE):
        rest = _subject(match)  # the thing done: the verb's tense would not match the task's anyway
        return TaskCandidate(label=rest or match["verb"], evidence=evidence, status="completed")
    for pattern in (DONE_WITH, DONE_PASSIVE, DONE_NL, DONE_NL_FRONTED):
        match = pattern.search(sentence)
        if match and match.start() < commit and not PRONOUN.match(subject := _subject(match)):
            return TaskCandidate(label=subject, evidence=evidence, status="completed")
    return None


# The assistant's offer of a to-do becomes the owner's task only when the owner's next turn accepts it.
OFFER = re.compile(
    r"\b(?:(?:shall|should|can|may) I|(?:do you |would you )?(?:want|like) me to) (?:add|create|set(?: up)?|make|"
    r"put (?:in|down)|note|jot down) (?:a |an )?"
    r"(?:to-?do|task|reminder|action item)(?: for you)?(?: to| for| that you)?\s+(?P<en>[^?]+)|"
    r"\b(?:shall|should) I remind you to\s+(?P<en2>[^?]+)|"
    r"\b(?:zal|moet) ik (?:een )?(?:taak|herinnering|to-?do|actiepunt) (?:toevoegen|aanmaken|maken|zetten)\s+"
    r"(?:om|voor|dat je)\s+(?P<nl>[^?]+)|\bzal ik je (?:eraan )?herinneren (?:om|dat je)\s+(?P<nl2>[^?]+)",
    _I,
)
ACCEPT = re.compile(
    r"^\s*(?:yes|yeah|yep|sure|ok(?:ay)?|please do|please|go ahead|sounds good|do it|ja|graag|prima|doe maar|"
    r"is goed|top)\b",
    _I,
)
REFUSE = re.compile(r"\b(?:no|not|don't|nee|niet|later)\b", _I)


def accepted_offer(offer: str, reply: str, evidence: EvidenceRef, today: date) -> Extraction:
    """The task an assistant offered to note ("Shall I add a to-do for you to book the flights by Sunday?"),
    when the owner's reply accepts it; nothing otherwise."""
    match = OFFER.search(offer)
    if match is None or not ACCEPT.match(reply) or REFUSE.search(reply):
        return Extraction()
    if action := match["en"] or match["en2"]:
        return find_tasks(f"I'll {clean(action)}.", evidence, today)
    # Dutch puts the verb last: "om de vluchten te boeken" is the task "de vluchten boeken".
    action = re.sub(r"\bte\s+(?=\w+$)", "", clean(match["nl"] or match["nl2"]))
    return find_tasks(f"Ik moet {action}.", evidence, today)
