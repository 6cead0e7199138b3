"""Facts in the owner's own sentences, clause by clause: where people live and work, health and diet,
preferences, relations, goals, decisions, agreements, standing rules, and short-lived working context.

A clause's subject decides whom a claim is about: "I"/"ik" is the owner (SELF); a named person ("my sister
Lotte", "Lotte, my sister,", "mijn broer Stijn", "Marcel") or a pronoun that points back to one is that person.
Quoted words are their speaker's ('Jan said "I hate sushi"' is about Jan), what someone is reported to have
said without quotes is not stored, and past states ("I used to work at ...") are not current ones. The people
a sentence names are found by people.py."""

from __future__ import annotations

import re

from memory.extraction.base import SELF, ClaimCandidate, EvidenceRef, Extraction, NodeRef
from memory.extraction.lexicon import JOB, JOB_BARE, NOT_JOBS, THIRD_PERSON, topic_of
from memory.extraction.people import (
    ACTOR,
    ADDRESSED,
    APPOSITION,
    GIVEN_TO,
    MET_WITH,
    OTHER_APPOSITION,
    POSSESSOR,
    RELATION,
    REVERSED,
    SPEAKER_QUOTE,
)
from memory.extraction.wording import NAME, RELATIONS, clean, is_name, sentence_case

_I = re.IGNORECASE
QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|\u2018[^\u2019]*\u2019|(?<![\w])'[^']{2,}'(?![\w])")
REPORTED = re.compile(r"\b(?:said|says|saying|told\s+(?:me|us)|claims?|zei|zegt|vertelde|beweert)\b.*", _I)
PAST = re.compile(r"\b(?:used\s+to|back\s+when|when\s+I\s+was|vroeger|toen\s+ik)\b", _I)
CLAUSE = re.compile(
    r"\s*[;:]\s*|,\s*(?=(?:and|but|so|since|because|en|maar|dus|want|omdat)\b)|,\s+|\s+(?=(?:and|but|so|en|maar|dus|want)\s+(?:I|ik|we|he|she|hij|zij|ze|[A-Z])\b)"
)

# Who a clause is about: the owner, "we" (the owner's household, for where they live), a pronoun, or a name.
SUBJECT = rf"(?P<subj>\b(?i:I|ik|we|wij|he|she|hij|zij|ze)\b|{NAME.replace('?P<name>', '')})"
ADVERBS = r"(?:\s+(?i:al\s+jaren|al\s+lang|jaren|really|much|far|a\s+lot|now|also|just|still|definitely|recently|absolutely|totally|honestly|genuinely|truly|actually|quite|simply|gewoon|sinds\s+kort|nu|ook|echt|al|inmiddels|tegenwoordig|sowieso))*"  # noqa: E501
GAP = r"(?:\s+(?!(?:in|te|at|for|bij)\b)[a-z0-9]+){0,4}?"  # "al twintig jaar", "sinds 2019"
BE = r"\s*(?:'m|'s|'re|'ve\s+been|\s+(?i:am|is|are|ben|bent|zijn|have\s+been|has\s+been))"
PLACE = r"(?P<place>[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*)*)"
ORG = r"(?P<org>(?:(?i:the|de|het)\s+)?(?:[a-z]+\s+)?[A-Z][\w&.\-]*(?:\s+[A-Z][\w&.\-]*)*)"
NOT_PREP = r"(?!(?i:in|at|for|bij|te|op|on|since|sinds|and|en|but|maar|so|dus)\b)"
ROLE = rf"(?:\s+(?i:as|als)\s+(?i:an?\s+|een\s+)?(?P<role>[\w-]+(?:\s+{NOT_PREP}[\w-]+)?))?"


def _pattern(body: str, *, inverted: str = "", rest: str = "") -> tuple[re.Pattern[str], ...]:
    """SUBJECT [adverbs] body; Dutch also puts the verb before "ik" after a fronted phrase ("Sinds mei werk ik"):
    `inverted` are those verbs, `rest` what follows them."""
    forms = [re.compile(rf"{SUBJECT}{ADVERBS}\s*{body}")]
    if inverted:
        forms.append(re.compile(rf"(?P<inv>\b(?i:{inverted})\s+(?i:ik|we|wij)\b){ADVERBS}\s*{rest}"))
    return tuple(forms)


def _matches(patterns: tuple[re.Pattern[str], ...], clause: str) -> list[re.Match[str]]:
    return [match for pattern in patterns for match in pattern.finditer(clause)]


# "in a care home in Assen", "op een boerderij bij Zwolle": a kind of home before the town.
INSIDE = r"(?:\s+(?i:in|at|on|op)\s+(?i:a|an|the|een|het|de)\s+[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)?"
NEAR = r"(?P<prep>(?i:in|te|near|outside|just\s+outside|close\s+to|bij|vlakbij|buiten))"
LIVES = _pattern(
    rf"(?:(?:'ve|\s+(?i:have|has)){ADVERBS}\s+(?i:lived)|(?i:live|lives|living|woon|woont|wonen)){ADVERBS}{GAP}"
    rf"{INSIDE}\s+{NEAR}\s+{PLACE}",
    inverted="woon|wonen",
    rest=rf"{GAP}{INSIDE}\s*{NEAR}\s+{PLACE}",
)
BASED = _pattern(rf"{BE}{ADVERBS}\s+(?i:based|located|settled|gevestigd)\s+(?i:in|te)\s+{PLACE}")
MOVED = _pattern(
    rf"(?:{BE}|\s+(?i:have|has|heb|hebben|heeft))?\s*(?i:moved|relocated|emigrated|verhuisd|ge[eë]migreerd)(?:\s+(?i:from|van)\s+[A-Z][\w\-]*)?\s+(?i:to|naar)\s+{PLACE}"
)
WORKS = _pattern(
    rf"(?i:(?:work|works|working|werk|werkt)){ADVERBS}{GAP}\s+(?i:at|for|bij)\s+{ORG}{ROLE}",
    inverted="werk|werken",
    rest=rf"{GAP}\s*(?i:at|for|bij)\s+{ORG}{ROLE}",
)
# A job without an employer ("works as a dentist"), a job got, a role at an employer ("I'm a nurse at the UMC").
WORKS_AS = _pattern(
    rf"(?i:work|works|werk|werkt)\s+(?i:as|als)\s+(?i:an?\s+|een\s+)?(?P<role>[\w-]+(?:\s+{NOT_PREP}[a-z-]+)?)",
    inverted="werk",
    rest=r"\s*(?i:als)\s+(?:(?i:een)\s+)?(?P<role>[\w-]+)",
)
GOT_JOB = _pattern(
    rf"(?:'ve\s+|\s+(?i:have|has)\s+)?(?i:got|landed|accepted)\s+(?i:a|an|the)\s+(?:new\s+)?(?i:job|position|role)\s+(?i:at|with)\s+{ORG}"
)
ROLE_AT = _pattern(rf"{BE}\s+(?i:an?|een)\s+(?P<role>[a-z-]+(?:\s+[a-z-]+)?)\s+(?i:at|bij)\s+{ORG}")
# "I'm a pharmacist at a hospital", "Gerrit is a retired pilot", "ik ben verpleegkundige": a job noun (by its
# ending) after "a"/"een", ending the clause or followed by where; "a patient person", "a big fan" are not jobs.
IS_JOB = _pattern(
    rf"{BE}\s+(?P<role>(?:(?i:an?|een)\s+)(?:(?i:retired|former|senior|junior|trainee|freelance|self-employed|"
    rf"gepensioneerde?|zelfstandig|ex-)\s+)?(?:[a-z-]+\s+)?{JOB}|{JOB_BARE})(?=\s*[.!]*\s*$|\s*[,;]|\s+(?i:at|in|for|with|bij|op|and|en|by|van)\b)"
    r"(?P<where>(?:\s+(?i:at|in|for|with|bij|op|van)\s+[^,;]+)?)"
)
IN_SERVICE = _pattern(rf"{BE}{GAP}\s+(?i:in\s+dienst\s+(?:bij|van)|employed\s+(?:by|at))\s+{ORG}")
# An employer without a name: "I work remotely for a startup in Berlin", "ze werkt bij de bank".
WORKS_SOME = _pattern(
    rf"(?i:work|works|working|werk|werkt){ADVERBS}(?:\s+(?i:remotely|part-time|full-time|parttime|fulltime))?\s+"
    r"(?P<prep>(?i:at|for|bij))\s+(?P<org>(?!(?i:a\s+living)\b)(?i:an?|the|een|de|het)\s+[a-z][\w-]*(?:\s+(?!(?i:as|als)\b)[^,;]+)?)"
)
JOINED = _pattern(rf"(?:(?i:have|has|'ve)\s+)?(?i:joined)\s+{ORG}{ROLE}")
STARTED = _pattern(
    rf"(?:(?i:have|has|'ve)\s+)?(?i:started|joined|began|begon|begonnen)(?:\s+(?i:working|to\s+work|met\s+werken))?{ROLE}\s+(?i:at|with|bij)\s+{ORG}"
)
FIRST_DAY = re.compile(rf"\b(?i:my\s+first\s+day\s+at|mijn\s+eerste\s+dag\s+bij)\s+{ORG}")
HEALTH = _pattern(
    rf"{BE}{ADVERBS}\s+(?i:severely\s+|very\s+|ernstig\s+|erg\s+|heel\s+)?(?P<what>(?i:allergic\s+to|allergisch\s+voor|intolerant\s+to)\s+.+|"
    r"(?i:(?:[\w]+[\s-])?intolerant|(?:an?\s+|een\s+)?(?:vegetarian|vegan|veganist|vegetari[eë]r|diabetic|diabeet)\b|vegetarisch|pregnant|zwanger|coeliac|celiac|"
    r"(?:gluten|dairy|lactose|sugar|nut|alcohol)[\s-]free|(?:gluten|lactose|suiker|alcohol)vrij))"
)
CONDITION = _pattern(
    r"(?:\s*'ve|\s+(?i:have|has|heb|heeft))\s+(?P<cond>(?i:an?\s+|een\s+)?(?:[\w-]+\s+)?[\w]*-?(?i:allergy|allergie|intolerance|"
    r"diabetes|asthma|astma|migraine|coeliakie|celiac\s+disease|epilepsy|epilepsie)\b.*)"
)
# "I can't have gluten", "ik kan niet tegen lactose": a bare thing, not "can't have the meeting on Friday".
CANNOT_HAVE = _pattern(
    r"(?i:can't|cannot|can\s+not|shouldn't|should\s+not)\s+(?i:have|tolerate|digest)\s+(?:(?i:any)\s+)?"
    r"(?P<what>(?!(?i:the|a|an|my|your|his|her|our|their|this|that|it|them|you|me|time|fun)\b)[a-z].+)"
)
CANNOT_HAVE_NL = re.compile(
    r"\b(?i:ik)\s+(?i:kan)\s+(?i:niet\s+tegen)\s+(?P<what>(?!(?i:de|het|een|mijn|dat|dit)\b)[a-z].+)"
)
ABSTAINS = _pattern(
    r"(?i:(?:don't|doesn't|do\s+not|does\s+not|never|can't|cannot|can\s+not)\s+(?P<verb>drink|eat)|"
    r"(?P<nlverb>drink|drinkt|eet|mag)\s+geen)\s+(?P<what>.+)"
)
PREFERENCE = _pattern(
    r"(?P<verb>(?i:prefers?|'d\s+rather|would\s+rather|likes?|loves?|adores?|enjoys?|hates?|dislikes?|"
    r"(?:don't|doesn't|do\s+not|does\s+not)\s+(?:really\s+)?(?:like|enjoy|love|care\s+for)|can't\s+stand|cannot\s+stand|can\s+not\s+stand|hou[dt]{0,2}(?:\s+(?:echt|erg|heel|zo|veel|wel|enorm|ook))*(?:\s+niet)?\s+van|"
    r"heb\s+een\s+hekel\s+aan|heeft\s+een\s+hekel\s+aan|"
    r"geef\s+de\s+voorkeur\s+aan|geeft\s+de\s+voorkeur\s+aan|(?:'m|am|is|ben)\s+(?:not\s+|geen\s+)?(?:a\s+|een\s+)?"
    r"(?:big\s+|huge\s+|grote\s+)?fan\s+(?:of|van)|(?:'m|am|is)\s+(?:really\s+)?into|(?:ben|is)\s+(?:echt\s+|erg\s+)?(?:gek|dol)\s+op))"
    r"\s+(?P<what>.+)"
)
PRODUCTIVE = _pattern(
    rf"{BE}\s+(?P<what>(?i:(?:far\s+|much\s+|a\s+lot\s+)?(?:more|most)\s+productive|at\s+my\s+best|veel\s+productiever|productiever)\s+.+)"
)
TEACHES = _pattern(
    r"(?P<verb>(?i:teach|teaches|teaching|study|studies|studying|studeer|studeert|geef\s+les\s+in|geeft\s+les\s+in|"
    r"doceer|doceert))\s+(?P<what>(?!(?i:the|a|an|my|me|him|her|them|us|for|hard)\b)\w.+)"
)
GOAL = _pattern(
    rf"{BE}\s+(?P<what>(?i:training\s+for|learning|studying|saving\s+(?:up\s+)?for|preparing\s+for|trying\s+to|"
    r"working\s+towards?|aan\s+het\s+trainen\s+voor|aan\s+het\s+sparen\s+voor|bezig\s+met)\s+.+)"
)
DUTCH_GOAL = _pattern(r"(?P<what>(?i:train|traint|spaar|spaart|probeer|probeert)\s+(?i:voor|om|te)\s+.+)")
MY_GOAL = re.compile(r"\b(?i:my\s+(?:main\s+|big\s+)?goal\s+(?:this\s+year\s+)?is|mijn\s+doel\s+is)\s+(?P<what>.+)")
# Dutch "ik vind X leuk" / "X vind ik lekker", "ik drink liever thee", and "my favourite X is Y" in both languages.
LIKES_NL = re.compile(
    r"\b(?:(?i:ik)\s+(?i:vind)\s+(?P<what>.+?)|(?P<what2>\S.*?)\s+(?i:vind\s+ik))\s+(?:(?i:echt|erg|heel|zo|super)\s+)?"
    r"(?P<adj>(?i:niet\s+)?(?i:leuk|fijn|lekker|heerlijk|prettig|vervelend|vreselijk|verschrikkelijk|saai))\b"
)
HOU_INVERTED = re.compile(
    r"\b(?i:hou|houd)\s+(?i:ik)(?:\s+(?i:echt|erg|heel|zo|veel|wel|ook|helemaal))*(?:\s+(?P<neg>(?i:niet)))?\s+(?i:van)\s+"
    r"(?P<what>.+)"
)
# Words that say a preference changed, so it replaces the earlier one on its topic.
CHANGE = re.compile(
    r"\b(?:now|nowadays|these\s+days|anymore|any\s+more|no\s+longer|since|lately|from\s+now\s+on|tegenwoordig|"
    r"inmiddels|nu|niet\s+meer|sinds|voortaan)\b",
    re.IGNORECASE,
)
RATHER_NL = _pattern(
    r"(?P<verb>(?i:drink|eet|werk|heb|ga|doe|zou))(?:\s+(?i:tegenwoordig|nu|inmiddels|echt|toch|veel|ook|zelf))*"
    r"\s+(?i:liever)\s+(?P<what>.+)"
)
FAVOURITE = re.compile(
    r"\b(?i:my\s+(?:favou?rite|favorite)|mijn\s+(?:favoriete|lievelings-?))\s*(?P<topic>[\w-]+(?:\s+[\w-]+)?)\s+"
    r"(?i:is|are|zijn)\s+(?P<value>.+)"
)
DECISION = re.compile(r"\b(?:I|we)(?:'ve| have)?\s+decided\s+(?:to|that|on)\s+(?P<what>.+)", _I)
AGREEMENT = re.compile(r"\bwe\s+(?:have\s+)?agreed\s+(?:to|that|on)\s+(?P<what>.+)", _I)
RULE = re.compile(r"^(?:please\s+)?(?P<what>(?:always|never(?!\s+mind)|from now on)\b.+)", _I)
MEETING = re.compile(r"\b(?P<what>(?i:meeting|call|lunch|dinner|sync|catch-up)\s+with\s+" + NAME + r".*)")
FOLLOW_UP = re.compile(r"\b(?P<what>(?i:follow(?:\s|-)up)\s+with\s+" + NAME + r".*)")


class _Clauses:
    """The people a sentence names and whom each clause is about."""

    def __init__(self, sentence: str, evidence: EvidenceRef) -> None:
        self.evidence = evidence
        self.sentence = sentence
        self.me = SELF  # whom "I" means: the owner, or the speaker of a quote being read
        self.found = Extraction()
        self.people: dict[str, NodeRef] = {}
        self.last: NodeRef | None = None

    def person(self, label: str) -> NodeRef | None:
        label = clean(label).removesuffix("'s")
        words = label.split()
        if len(words) > 1 and not is_name(words[-1]):  # "call Anna Tuesday": the weekday is not her surname
            label = " ".join(words[:-1])
        if not is_name(label):
            return None
        if label not in self.people:
            self.people[label] = NodeRef(type="Person", label=label)
            self.found.people.append(self.people[label])
        self.last = self.people[label]
        return self.people[label]

    def subject(self, match: re.Match[str], *, households: bool = False) -> NodeRef | None:
        if match.groupdict().get("inv"):
            return self.me
        said = match["subj"]
        lowered = said.lower()
        if lowered in ("i", "ik") or (households and self.me.is_self and lowered in ("we", "wij")):
            return self.me
        if lowered in ("he", "she", "hij", "zij", "ze", "we", "wij"):
            return self.last if lowered not in ("we", "wij") else None
        return self.person(said)

    def claim(
        self,
        subject: NodeRef,
        body: str,
        kind: str = "fact",
        predicate: str = "",
        target: NodeRef | None = None,
        importance: int = 4,
        value: dict[str, object] | None = None,
    ) -> None:
        body = sentence_case(body)
        statement = body if subject.is_self else f"{subject.label} {body[:1].lower()}{body[1:]}"
        self.found.claims.append(
            ClaimCandidate(
                f"{statement}.", kind, subject, self.evidence, predicate, target, value, importance=importance
            )
        )

    def preference(self, subject: NodeRef, body: str, topic: str, *, exclusive: bool = False) -> None:
        """A preference keyed by its topic. It replaces the earlier ones on that topic when it says so: a choice
        ("prefer", "liever", "favourite") or a change ("now", "these days", "no longer", "tegenwoordig"); "I like
        strong coffee" and "I love iced coffee" both stay."""
        replaces = exclusive or bool(CHANGE.search(self.sentence))
        value = {"topic": topic, "replaces": replaces}
        self.claim(subject, body, "preference", f"PREFERS:{topic}", importance=3, value=value)


def find_facts(sentence: str, evidence: EvidenceRef, *, antecedent: NodeRef | None = None) -> Extraction:
    """Claims in one sentence of the owner's, about the owner or about the people it names, and those people.
    `antecedent`: the person the previous sentence named last, whom a leading "she"/"hij" may mean."""
    clauses = _Clauses(sentence, evidence)
    text = QUOTED.sub(" ", sentence)
    for pattern in (RELATION, APPOSITION, REVERSED):
        for match in pattern.finditer(text):
            if (person := clauses.person(match["name"])) is not None:
                said = match["relation"].lower()
                relation = RELATIONS[said] + ("" if RELATIONS[said] == said else f" ({said})")
                clauses.found.claims.append(
                    ClaimCandidate(
                        f"{person.label} is the user's {relation}.",
                        "fact",
                        SELF,
                        evidence,
                        "RELATED_TO",
                        person,
                        object_value={"relation": relation},
                        importance=4,
                    )
                )
    # "Lotte, my sister, lives ..." reads as "Lotte lives ...", the relation already taken.
    text = OTHER_APPOSITION.sub(lambda m: m["name"] + " ", APPOSITION.sub(lambda m: m["name"] + " ", text))
    text = RELATION.sub(lambda m: m["name"], text)
    for pattern in (GIVEN_TO, ADDRESSED, MET_WITH, ACTOR, POSSESSOR):
        for match in pattern.finditer(text):
            clauses.person(match["name"])
    clauses.last = antecedent
    for clause in filter(None, (part.strip() for part in CLAUSE.split(text))):
        _clause(REPORTED.sub("", clause), clauses)
    for match in SPEAKER_QUOTE.finditer(sentence):  # 'Jan said "I hate sushi"' is about Jan
        if (speaker := clauses.person(match["name"])) is not None:
            clauses.me, clauses.last = speaker, speaker
            for clause in filter(None, (part.strip() for part in CLAUSE.split(match["quote"] or match["q2"]))):
                _clause(clause, clauses)
            clauses.me = SELF
    _owner_only(sentence, text, clauses)
    return clauses.found


def _clause(clause: str, clauses: _Clauses) -> None:
    if ACTOR.search(clause) and (match := ACTOR.search(clause)):
        clauses.person(match["name"])
    if PAST.search(clause):
        return  # a past job or home is not the current one
    claim = clauses.claim
    for match in _matches(LIVES, clause):
        if (who := clauses.subject(match, households=True)) is not None:
            place = NodeRef(type="Place", label=clean(match["place"]))
            prep = match["prep"].lower()
            near = "in" if prep in ("in", "te") else "near" if prep in ("bij", "vlakbij", "close to") else prep
            claim(who, f"Lives {near} {place.label}", "fact", "LIVES_IN", place)
    for match in _matches(MOVED, clause):
        if (who := clauses.subject(match, households=True)) is not None:
            place = NodeRef(type="Place", label=clean(match["place"]))
            claim(who, f"Lives in {place.label}", "fact", "LIVES_IN", place)
    for match in _matches(BASED, clause):
        if (who := clauses.subject(match, households=True)) is not None:
            place = NodeRef(type="Place", label=clean(match["place"]))
            claim(who, f"Lives in {place.label}", "fact", "LIVES_IN", place)
    for pattern in (WORKS, STARTED, JOINED):
        for match in _matches(pattern, clause):
            if (who := clauses.subject(match)) is not None:
                _works(clauses, who, match["org"], match["role"])
    for pattern in (GOT_JOB, ROLE_AT, IN_SERVICE):
        for match in _matches(pattern, clause):
            if (who := clauses.subject(match)) is not None:
                _works(clauses, who, match["org"], match.groupdict().get("role"))
    if not any(_matches(p, clause) for p in (WORKS, ROLE_AT)):
        for match in _matches(WORKS_SOME, clause):
            if (who := clauses.subject(match)) is not None:
                clauses.claim(who, f"Works {match['prep'].lower().replace('bij', 'at')} {clean(match['org'])}")
    for match in _matches(WORKS_AS, clause):
        if (who := clauses.subject(match)) is not None and not re.search(r"\b(?i:at|for|bij)\s+[A-Z]", clause):
            clauses.claim(who, f"Works as {clean(match['role'])}")
    if not _matches(ROLE_AT, clause) and not _matches(HEALTH, clause):  # "a vegetarian" is a diet, not a job
        for match in _matches(IS_JOB, clause):
            role = match["role"].split()[-1].lower().split("-")[-1]
            if role not in NOT_JOBS and (who := clauses.subject(match)) is not None:
                role = re.sub(r"^(?i:an?|een)\s+", "", clean(match["role"]))
                article = "an" if role[:1].lower() in "aeiou" else "a"
                claim(who, " ".join(filter(None, ("Is", article, role, clean(match["where"])))))
    for match in _matches(TEACHES, clause):
        if (who := clauses.subject(match)) is not None:
            verb = match["verb"].lower()
            studies = verb.startswith(("stud", "study"))
            claim(who, f"{'Studies' if studies else 'Teaches'} {clean(match['what'])}")
    if match := FIRST_DAY.search(clause):
        _works(clauses, clauses.me, match["org"], None)
    for match in _matches(HEALTH, clause):
        if (who := clauses.subject(match)) is not None:
            claim(who, f"Is {clean(match['what'])}")
    for match in _matches(CONDITION, clause):
        if (who := clauses.subject(match)) is not None:
            claim(who, f"Has {clean(match['cond'])}")
    for match in _matches(CANNOT_HAVE, clause):
        if (who := clauses.subject(match)) is not None:
            claim(who, f"Cannot have {clean(match['what'])}")
    if (match := CANNOT_HAVE_NL.search(clause)) and clauses.me.is_self:
        claim(clauses.me, f"Cannot have {clean(match['what'])}")
    for match in _matches(ABSTAINS, clause):
        if (who := clauses.subject(match)) is not None:
            verb = (match["verb"] or match["nlverb"]).lower()
            claim(
                who,
                f"Does not {'drink' if verb.startswith('drink') else 'eat'} {NO_MORE.sub('', clean(match['what']))}",
                "preference",
            )
    for match in _matches(PREFERENCE, clause):
        if (who := clauses.subject(match)) is not None:
            verb = " ".join(match["verb"].lower().split())
            verb = re.sub(r"^(prefer|like|love|adore|enjoy|hate|dislike)s$", r"\1", verb)
            verb = verb.replace("doesn't", "don't").replace("does not", "do not")
            verb = re.sub(r"^(don't|do not)\s+(?:really\s+)?(?:enjoy|love|care\s+for)$", r"\1 like", verb)
            verb = verb.replace("heeft", "heb").replace("geeft", "geef")
            if verb.startswith("hou"):  # "hou echt van", "houdt niet van"
                verb = "hou niet van" if " niet " in verb else "hou van"
            elif re.search(r"\b(?:fan|into|gek|dol)\b", verb):  # "a big fan of", "into", "gek op"
                verb = "don't like" if re.search(r"\b(?:not|geen)\b", verb) else ("love" if "op" in verb else "like")
            what = clean(match["what"])
            exclusive = verb in ("prefer", "geef de voorkeur aan", "'d rather", "would rather")
            clauses.preference(
                who, f"{THIRD_PERSON.get(verb, verb.capitalize())} {what}", topic_of(what), exclusive=exclusive
            )
    _dutch_and_favourite(clause, clauses)
    for pattern in (PRODUCTIVE, GOAL):
        for match in _matches(pattern, clause):
            if (who := clauses.subject(match)) is not None:
                kind = "preference" if pattern is PRODUCTIVE else "fact"
                claim(who, f"Is {clean(match['what'])}", kind, importance=3)
    if match := MY_GOAL.search(clause):
        claim(clauses.me, f"Goal: {clean(match['what'])}", importance=3)
    for match in _matches(DUTCH_GOAL, clause):
        if (who := clauses.subject(match)) is clauses.me:
            claim(who, clean(match["what"]), importance=3)


NO_MORE = re.compile(r"\s+(?i:meer|anymore|any\s+more)$")


def _dutch_and_favourite(clause: str, clauses: _Clauses) -> None:
    if match := HOU_INVERTED.search(clause):  # "Eerlijk gezegd hou ik niet van sushi"
        what = clean(match["what"])
        verb = "Does not like" if match["neg"] else "Loves"
        clauses.preference(clauses.me, f"{verb} {what}", topic_of(what))
    if match := LIKES_NL.search(clause):
        what = clean(match["what"] or match["what2"])
        if not re.search(r"\b(?i:het|dat|dit)$", what):  # "vind ik het leuk": no object to keep
            disliked = match["adj"].lower().startswith("niet") or match["adj"].lower() in (
                "vervelend",
                "vreselijk",
                "verschrikkelijk",
                "saai",
            )
            verb = "Does not like" if disliked else "Likes"
            clauses.preference(clauses.me, f"{verb} {what}", topic_of(what))
    for match in _matches(RATHER_NL, clause):
        if clauses.subject(match) is clauses.me:
            what = clean(match["what"])
            topic = topic_of(re.split(r"\b(?i:dan)\b", what)[0])
            clauses.preference(clauses.me, f"Prefers: {match['verb'].lower()} liever {what}", topic, exclusive=True)
    if match := FAVOURITE.search(clause):
        topic = match["topic"].lower()
        clauses.preference(
            clauses.me, f"Favourite {topic} is {clean(match['value'])}", f"favourite-{topic}", exclusive=True
        )


def _works(clauses: _Clauses, who: NodeRef, org_text: str | None, role: str | None) -> None:
    org_label = re.sub(r"^(?i:the|de|het)\s+", "", clean(org_text or ""))
    if not org_label:
        return
    org = NodeRef(type="Organization", label=org_label)
    as_role = f" as {clean(role)}" if role else ""
    clauses.claim(who, f"Works at {org.label}{as_role}", "fact", "WORKS_AT", org)


def _owner_only(sentence: str, text: str, clauses: _Clauses) -> None:
    """Decisions, agreements, standing rules and working context: the owner's own words say it best."""
    found, evidence = clauses.found, clauses.evidence
    for pattern, kind in ((DECISION, "decision"), (AGREEMENT, "agreement")):
        if pattern.search(text):
            found.claims.append(ClaimCandidate(f"{sentence_case(sentence)}.", kind, SELF, evidence))
    if match := RULE.search(sentence):
        found.claims.append(ClaimCandidate(f"{sentence_case(match['what'])}.", "rule", SELF, evidence, importance=4))
    for pattern in (MEETING, FOLLOW_UP):
        if (match := pattern.search(text)) and (person := clauses.person(match["name"])) is not None:
            found.claims.append(
                ClaimCandidate(
                    f"{sentence_case(match['what'])}.",
                    "working_context",
                    SELF,
                    evidence,
                    "MEETS",
                    person,
                    importance=2,
                    expires_in_days=14,
                )
            )
