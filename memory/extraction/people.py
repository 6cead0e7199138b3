"""Named people in a sentence: relations ("my sister Lotte", "Lotte, my sister,", "mijn broer Stijn"), who gets
something, who is asked, met or called, who does or says something, and who is quoted. A name starts with a
capital; words that only look like names (wording.NOT_NAMES) are left to the caller to refuse."""

from __future__ import annotations

import re

from memory.extraction.wording import NAME, RELATION_WORDS

ADJ = r"(?:(?:older|younger|little|big|new|old|best|oudere|jongere|kleine|grote|nieuwe|oude|beste)\s+)?"
REL = rf"(?i:(?P<relation>{RELATION_WORDS}))"
# "My manager, Olivia, lives ...": a name set off by commas takes its closing comma along.
RELATION = re.compile(
    rf"\b(?i:my|mijn|our|onze|ons)\s+{ADJ}{REL}(?:'s\s+name)?(?P<comma>,)?\s+(?:(?i:is|heet)\s+)?{NAME}\b(?(comma),?)"
)
APPOSITION = re.compile(rf"\b{NAME},\s+(?i:my|mijn|our|onze|ons)\s+{ADJ}{REL}\s*,\s*")
OTHER_APPOSITION = re.compile(rf"\b{NAME},\s+(?i:the|our|a|de|het|onze|een)\s+[\w\s-]{{1,30}}?,\s*")
REVERSED = re.compile(rf"\b{NAME}\s+(?i:is\s+my|is\s+mijn)\s+{ADJ}{REL}\b")
# Named people who are not a clause's subject: who gets something, who is asked, met or called.
GIVEN_TO = re.compile(
    rf"\b(?i:send|sends|sent|give|gives|gave|hand|hands|handed|forward|show|pass|email|mail|stuur|stuurt|stuurde|geef|geeft|breng|mail|mailt)\b[^.,;:]{{0,50}}?\b(?i:to|naar|aan)\s+{NAME}\b"
)
ADDRESSED = re.compile(
    rf"\b(?i:ask|asks|asked|tell|tells|told|call|calls|called|email|emailed|text|texted|remind|reminded|thank|thanked|invite|invited|met|meet|vraag|vraagt|vroeg|bel|belt|belde|spreek|sprak|zie|zag)\s+{NAME}\b"
)
MET_WITH = re.compile(
    r"\b(?i:talk|talked|spoke|speak|meet|met|meeting|lunch|dinner|coffee|drinks|call|sync|chat|afspraak|overleg|"
    r"gesprek|etentje|koffie|praat|praten|gepraat|gesproken|afgesproken|bellen|gebeld)\b[^.,;:]{0,20}?"
    rf"\b(?i:with|met)\s+{NAME}\b"
)
SPEAKER_QUOTE = re.compile(
    rf"\b{NAME}\s+(?i:said|says|kept\s+saying|keeps\s+saying|told\s+(?:me|us)|wrote|texted|zei|zegt|riep|schreef|"
    r"appte)(?:\s+\w+){0,2}?\s*[:,]?\s*(?:\"(?P<quote>[^\"]+)\"|“(?P<q2>[^”]+)”)"
)
# A name as the subject of what people do. Things are subjects too ("Dinner will be at seven", "Rent is going
# up", "Netflix keeps raising prices"), so a modal counts only before a verb of doing, "going" only with "to",
# "kept" only with speech.
ACTOR = re.compile(
    rf"(?:^|(?<=[:;,])\s*|\b(?i:and|but|then|en|maar|dan)\s+){NAME}\s+(?:(?i:just|also|really|ook|al|nog)\s+)?"
    r"(?:(?i:promised|promises|said|says|told|asked|wants|wanted|lives|works|worked|prefers|likes|loves|hates|"
    r"started|sent|called|emailed|mentioned|thinks|needs|heeft\s+beloofd|heeft\s+gezegd|zei|zegt|woont|werkt|wil|"
    r"wilde|belooft|beloofde|stuurt|stuurde|vindt|houdt)|(?i:kept|keeps)\s+(?i:saying|asking|telling|talking|"
    r"complaining|calling|texting|mentioning)|(?i:is|was)\s+(?i:going)\s+(?i:to)|"
    r"(?i:will|would|can|could|should|gaat|ging|zal|zou|moet|kan|komt|heeft|had)\s+(?!(?i:be|been|become|change|"
    r"happen|cost|go\s+up|zijn|worden|kosten|duren|gebeuren|veranderen)\b)[a-z]+)\b"
)
# "Ingrid's plants", "Tom's birthday": only people have these (unlike "Apple's new phone", "Sainsbury's").
POSSESSOR = re.compile(
    rf"\b{NAME}'s\s+(?:(?i:new|old|little|big|first|last|surprise|farewell|retirement|leaving|\d+\w*)\s+)?"
    r"(?i:plants?|kids?|children|baby|dog|cat|pets?|birthday|party|wedding|funeral|graduation|house|flat|apartment|"
    r"place|home|car|bike|keys|mail|post|parents|mum|mom|dad|mother|father|wife|husband|partner|son|daughter|sister|"
    r"brother|garden|thesis|essay|homework|recital|flight|suitcase|present|gift|visa|passport|room|desk|cake|"
    r"surgery|operation|appointment)\b"
)
