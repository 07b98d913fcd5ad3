"""Build the small English-German sample corpus that ships in nmt_cli/sample/.

The corpus consists of

* hand-written sentence pairs, read from ``sample_pairs.tsv`` beside this script
  (a header line ``en<TAB>de``, then one pair per line), and
* pairs generated from hand-written templates below.  The templates carry German
  gender, number and case information, so articles, adjective endings and verb
  forms always agree.

All pairs are de-duplicated, shuffled with a fixed seed and split into test (200),
val (200) and train (the rest).  The same inputs give byte-for-byte the same files.
Standard library only; run from the repository root::

    python tools/make_sample.py              # rewrites nmt_cli/sample/*.{en,de}
    python tools/make_sample.py --out DIR    # writes the six files into DIR instead
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

SEED = 20240611
N_TEST = 200
N_VAL = 200
HERE = Path(__file__).resolve().parent
PAIRS_TSV = HERE / "sample_pairs.tsv"
DEFAULT_OUT = HERE.parent / "nmt_cli" / "sample"

Pair = tuple[str, str]
Template = Callable[[random.Random], Pair]
T = TypeVar("T")


# ---------------------------------------------------------------------------
# Grammar helpers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Noun:
    en: str  # English, without article
    de: str  # German nominative (singular, or plural if g == "pl")
    g: str  # German gender/number: "m", "f", "n" or "pl"
    cats: tuple[str, ...] = ()
    en_pl: bool = False  # English noun is plural ("are", "these")
    de_dat: str = ""  # German dative form if it differs (dative plural -n)
    count: bool = True  # False for mass nouns ("data", "code")
    de_adj: str = ""  # fixed adjective stem that is always inflected


@dataclass(frozen=True)
class Adj:
    en: str
    de: str  # predicative form
    stem: str = ""  # stem for inflected forms if different (teuer -> teur)

    def inflect(self, ending: str) -> str:
        return (self.stem or self.de) + ending


DEF = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"},
}
THIS = {
    "nom": {"m": "dieser", "f": "diese", "n": "dieses", "pl": "diese"},
    "acc": {"m": "diesen", "f": "diese", "n": "dieses", "pl": "diese"},
    "dat": {"m": "diesem", "f": "dieser", "n": "diesem", "pl": "diesen"},
}
# endings of ein/kein/mein/unser...
EIN = {
    "nom": {"m": "", "f": "e", "n": "", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
}
# adjective endings
WEAK = {
    "nom": {"m": "e", "f": "e", "n": "e", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "e", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
MIXED = {
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
STRONG = {
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
}
POSS = {"my": "mein", "his": "sein", "her": "ihr", "our": "unser", "their": "ihr"}


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def a_or_an(word: str) -> str:
    w = word.lower()
    if w.startswith(("use", "usu", "uni", "eu", "one")):
        return "a"
    return "an" if w[:1] in "aeiou" else "a"


def de_np(noun: Noun, case: str, det: str, adj: Adj | None = None) -> str:
    """German noun phrase.  det: def, this, a, no (kein), bare, or a POSS key."""
    g = noun.g
    word = noun.de_dat if (case == "dat" and noun.de_dat) else noun.de
    if det == "def":
        art, table = DEF[case][g], WEAK
    elif det == "this":
        art, table = THIS[case][g], WEAK
    elif det == "a" and g != "pl":
        art, table = "ein" + EIN[case][g], MIXED
    elif det == "no":
        art, table = "kein" + EIN[case][g], MIXED
    elif det in POSS:
        art, table = POSS[det] + EIN[case][g], MIXED
    else:  # "bare", or "a" with a plural noun
        art, table = "", STRONG
    words = [art] if art else []
    ending = table[case][g]
    if adj:
        words.append(adj.inflect(ending))
    if noun.de_adj:
        words.append(noun.de_adj + ending)
    words.append(word)
    return " ".join(words)


def en_np(noun: Noun, det: str, adj: Adj | None = None) -> str:
    words = ([adj.en] if adj else []) + [noun.en]
    if det == "def":
        art = "the"
    elif det == "this":
        art = "these" if noun.en_pl else "this"
    elif det in ("a", "no"):
        art = "" if (noun.en_pl or not noun.count) else a_or_an(words[0])
    elif det in POSS:
        art = det
    else:
        art = ""
    return " ".join(([art] if art else []) + words)


@dataclass(frozen=True)
class Subj:
    en: str
    de: str
    p: str  # "1sg", "3sg", "1pl" or "3pl"
    kind: str = "person"  # or "org"


SUBJECTS = [
    Subj("I", "ich", "1sg"),
    Subj("he", "er", "3sg"),
    Subj("she", "sie", "3sg"),
    Subj("we", "wir", "1pl"),
    Subj("they", "sie", "3pl"),
    Subj("my brother", "mein Bruder", "3sg"),
    Subj("my sister", "meine Schwester", "3sg"),
    Subj("my father", "mein Vater", "3sg"),
    Subj("my mother", "meine Mutter", "3sg"),
    Subj("my parents", "meine Eltern", "3pl"),
    Subj("my grandmother", "meine Großmutter", "3sg"),
    Subj("my uncle", "mein Onkel", "3sg"),
    Subj("my aunt", "meine Tante", "3sg"),
    Subj("my colleagues", "meine Kollegen", "3pl"),
    Subj("the children", "die Kinder", "3pl"),
    Subj("the students", "die Studenten", "3pl"),
    Subj("Anna", "Anna", "3sg"),
    Subj("Tom", "Tom", "3sg"),
    Subj("Lena", "Lena", "3sg"),
    Subj("Paul", "Paul", "3sg"),
    Subj("Maria", "Maria", "3sg"),
    Subj("David", "David", "3sg"),
    Subj("Sophie", "Sophie", "3sg"),
    Subj("Jonas", "Jonas", "3sg"),
    Subj("our team", "unser Team", "3sg", "org"),
    Subj("the company", "die Firma", "3sg", "org"),
    Subj("the university", "die Universität", "3sg", "org"),
]
PEOPLE = [s for s in SUBJECTS if s.kind == "person"]
ORG_CATS = {"device", "vehicle", "soft", "code", "model", "data", "file", "doc", "mail", "digital"}


def pick(rng: random.Random, seq: Sequence[T], weights: Sequence[float] | None = None) -> T:
    if weights:
        return rng.choices(seq, weights=weights, k=1)[0]
    return rng.choice(seq)


def person(rng: random.Random, i_weight: float = 0.0) -> Subj:
    if i_weight and rng.random() < i_weight:
        return PEOPLE[0]
    return rng.choice(PEOPLE)


def form(forms: tuple[str, str, str], p: str) -> str:
    """forms = (1sg, 3sg, plural)."""
    return forms[0] if p == "1sg" else forms[1] if p == "3sg" else forms[2]


def en_pres(base: str, third: str, p: str) -> str:
    return third if p == "3sg" else base


BE_EN = {"1sg": "am", "3sg": "is", "1pl": "are", "3pl": "are"}
SEIN = ("bin", "ist", "sind")
HABEN = ("habe", "hat", "haben")


# a sentence pattern: English verb ((base, 3sg), or "be" for am/is/are), English rest,
# German verb forms (1sg, 3sg, plural), German rest; the rests are str.format templates
PersonSentence = tuple[tuple[str, str] | str, str, tuple[str, str, str], str]


def person_sentence(s: Subj, sentence: PersonSentence, en_words: dict[str, str],
                    de_words: dict[str, str]) -> Pair:
    """Subject, verb and the rest of a sentence pattern, in English and German."""
    en_verb, en_rest, de_forms, de_rest = sentence
    verb = BE_EN[s.p] if en_verb == "be" else en_pres(*en_verb, s.p)
    return (cap(f"{s.en} {verb} {en_rest.format(**en_words)}."),
            cap(f"{s.de} {form(de_forms, s.p)} {de_rest.format(**de_words)}."))


def en_do(p: str) -> str:
    return "does" if p == "3sg" else "do"


# ---------------------------------------------------------------------------
# Vocabulary for subject-verb-object templates
# ---------------------------------------------------------------------------

ADJ = {
    "new": Adj("new", "neu"),
    "old": Adj("old", "alt"),
    "expensive": Adj("expensive", "teuer", "teur"),
    "cheap": Adj("cheap", "billig"),
    "small": Adj("small", "klein"),
    "used": Adj("used", "gebraucht"),
    "black": Adj("black", "schwarz"),
    "red": Adj("red", "rot"),
    "blue": Adj("blue", "blau"),
    "electric": Adj("electric", "elektrisch"),
    "fresh": Adj("fresh", "frisch"),
    "big": Adj("big", "groß"),
    "large": Adj("large", "groß"),
    "delicious": Adj("delicious", "lecker"),
    "interesting": Adj("interesting", "interessant"),
    "thick": Adj("thick", "dick"),
    "german": Adj("German", "deutsch"),
    "long": Adj("long", "lang"),
    "short": Adj("short", "kurz"),
    "important": Adj("important", "wichtig"),
    "simple": Adj("simple", "einfach"),
    "free": Adj("free", "kostenlos"),
    "popular": Adj("popular", "beliebt"),
    "multilingual": Adj("multilingual", "mehrsprachig"),
    "warm": Adj("warm", "warm"),
    "clean": Adj("clean", "sauber"),
}

ADJ_BY_CAT = {
    "device": ["new", "old", "expensive", "cheap", "small", "used", "black"],
    "vehicle": ["new", "old", "used", "red", "expensive", "electric"],
    "food": ["fresh", "big", "small", "delicious"],
    "book": ["new", "old", "interesting", "thick", "german"],
    "doc": ["long", "short", "important", "new"],
    "code": ["new", "small", "simple"],
    "soft": ["new", "free", "popular"],
    "model": ["new", "small", "large", "multilingual"],
    "clothing": ["new", "warm", "red", "black", "blue", "old"],
    "file": ["new", "old", "large", "important"],
    "data": ["new", "old", "clean", "important"],
}

# per-noun adjective lists where the category default would sound odd
NOUN_ADJ = {
    "update": ["new"],
    "script": ["new", "short", "simple"],
    "function": ["new", "short", "simple"],
    "website": ["new", "simple", "small"],
    "database": ["new", "large", "free"],
    "poem": ["short", "long", "new"],
    "invitation": ["new", "important"],
    "router": ["new", "old", "cheap"],
    "watch": ["new", "old", "expensive", "cheap", "black", "small"],
    "browser": ["new", "free", "popular"],
    "newspaper": ["new", "old", "german"],
    "magazine": ["new", "old", "interesting", "german"],
}

OBJECTS = [
    Noun("computer", "Computer", "m", ("device",)),
    Noun("laptop", "Laptop", "m", ("device",)),
    Noun("phone", "Handy", "n", ("device",)),
    Noun("tablet", "Tablet", "n", ("device",)),
    Noun("printer", "Drucker", "m", ("device",)),
    Noun("keyboard", "Tastatur", "f", ("device",)),
    Noun("monitor", "Monitor", "m", ("device",)),
    Noun("camera", "Kamera", "f", ("device",)),
    Noun("router", "Router", "m", ("device",)),
    Noun("headphones", "Kopfhörer", "pl", ("device",), en_pl=True, de_dat="Kopfhörern"),
    Noun("watch", "Uhr", "f", ("device",)),
    Noun("car", "Auto", "n", ("vehicle",)),
    Noun("bike", "Fahrrad", "n", ("vehicle",)),
    Noun("scooter", "Roller", "m", ("vehicle",)),
    Noun("apple", "Apfel", "m", ("food",)),
    Noun("cake", "Kuchen", "m", ("food",)),
    Noun("sandwich", "Sandwich", "n", ("food",)),
    Noun("banana", "Banane", "f", ("food",)),
    Noun("pizza", "Pizza", "f", ("food",)),
    Noun("salad", "Salat", "m", ("food",)),
    Noun("pear", "Birne", "f", ("food",)),
    Noun("pretzel", "Brezel", "f", ("food",)),
    Noun("cookie", "Keks", "m", ("food",)),
    Noun("bread roll", "Brötchen", "n", ("food",)),
    Noun("tomatoes", "Tomaten", "pl", ("food",), en_pl=True),
    Noun("strawberries", "Erdbeeren", "pl", ("food",), en_pl=True),
    Noun("book", "Buch", "n", ("book",)),
    Noun("newspaper", "Zeitung", "f", ("book",)),
    Noun("magazine", "Zeitschrift", "f", ("book",)),
    Noun("novel", "Roman", "m", ("book",)),
    Noun("cookbook", "Kochbuch", "n", ("book",)),
    Noun("textbook", "Lehrbuch", "n", ("book",)),
    Noun("letter", "Brief", "m", ("doc", "mail")),
    Noun("email", "E-Mail", "f", ("doc", "mail", "digital")),
    Noun("message", "Nachricht", "f", ("doc", "mail", "digital")),
    Noun("report", "Bericht", "m", ("doc", "mail")),
    Noun("article", "Artikel", "m", ("doc",)),
    Noun("text", "Text", "m", ("doc",)),
    Noun("poem", "Gedicht", "n", ("doc",)),
    Noun("invitation", "Einladung", "f", ("doc", "mail")),
    Noun("program", "Programm", "n", ("code", "soft")),
    Noun("app", "App", "f", ("code", "soft")),
    Noun("script", "Skript", "n", ("code",)),
    Noun("function", "Funktion", "f", ("code",)),
    Noun("website", "Website", "f", ("code",)),
    Noun("browser", "Browser", "m", ("soft",)),
    Noun("update", "Update", "n", ("soft",)),
    Noun("database", "Datenbank", "f", ("soft",)),
    Noun("translation app", "Übersetzungs-App", "f", ("soft",)),
    Noun("model", "Modell", "n", ("model",)),
    Noun("neural network", "Netz", "n", ("model",), de_adj="neuronal"),
    Noun("translation model", "Übersetzungsmodell", "n", ("model",)),
    Noun("language model", "Sprachmodell", "n", ("model",)),
    Noun("classifier", "Klassifikator", "m", ("model",)),
    Noun("jacket", "Jacke", "f", ("clothing",)),
    Noun("shirt", "Hemd", "n", ("clothing",)),
    Noun("coat", "Mantel", "m", ("clothing",)),
    Noun("hat", "Hut", "m", ("clothing",)),
    Noun("dress", "Kleid", "n", ("clothing",)),
    Noun("sweater", "Pullover", "m", ("clothing",)),
    Noun("scarf", "Schal", "m", ("clothing",)),
    Noun("shoes", "Schuhe", "pl", ("clothing",), en_pl=True, de_dat="Schuhen"),
    Noun("file", "Datei", "f", ("file",)),
    Noun("document", "Dokument", "n", ("file",)),
    Noun("photo", "Foto", "n", ("file",)),
    Noun("presentation", "Präsentation", "f", ("file",)),
    Noun("spreadsheet", "Tabelle", "f", ("file",)),
    Noun("photos", "Fotos", "pl", ("file",), en_pl=True),
    Noun("data", "Daten", "pl", ("data",), count=False),
    Noun("dataset", "Datensatz", "m", ("data",)),
    Noun("training data", "Trainingsdaten", "pl", ("data",), count=False),
]


@dataclass(frozen=True)
class Verb:
    en: str
    en3: str
    ing: str  # "" for stative verbs (no progressive)
    past: str  # "" if not used in the past
    de: tuple[str, str, str]  # 1sg, 3sg, plural (= infinitive)
    part: str  # German past participle (aux haben), "" if not used
    cats: tuple[str, ...]
    org: bool  # may an organisation be the subject?
    poss: bool  # may the object have a possessive?
    neg: str  # "kein", "nicht" or ""


VERBS = [
    Verb("buy", "buys", "buying", "bought", ("kaufe", "kauft", "kaufen"), "gekauft",
         ("device", "vehicle", "food", "book", "clothing"), True, False, "kein"),
    Verb("sell", "sells", "selling", "sold", ("verkaufe", "verkauft", "verkaufen"), "verkauft",
         ("device", "vehicle", "book"), True, True, "nicht"),
    Verb("need", "needs", "", "", ("brauche", "braucht", "brauchen"), "",
         ("device", "vehicle", "clothing", "book", "soft"), True, True, "kein"),
    Verb("have", "has", "", "", ("habe", "hat", "haben"), "",
         ("device", "vehicle", "clothing", "book"), True, False, "kein"),
    Verb("read", "reads", "reading", "read", ("lese", "liest", "lesen"), "gelesen", ("book", "doc"),
         False, True, "nicht"),
    Verb("write", "writes", "writing", "wrote", ("schreibe", "schreibt", "schreiben"),
         "geschrieben", ("doc", "code"), True, False, ""),
    Verb("eat", "eats", "eating", "ate", ("esse", "isst", "essen"), "gegessen", ("food",), False,
         False, ""),
    Verb("use", "uses", "using", "used", ("benutze", "benutzt", "benutzen"), "benutzt",
         ("device", "soft", "model", "data"), True, True, "nicht"),
    Verb("test", "tests", "testing", "tested", ("teste", "testet", "testen"), "getestet",
         ("soft", "code", "model"), True, True, "nicht"),
    Verb("train", "trains", "training", "trained", ("trainiere", "trainiert", "trainieren"),
         "trainiert", ("model",), True, True, ""),
    Verb("install", "installs", "installing", "installed",
         ("installiere", "installiert", "installieren"), "installiert", ("soft",), True, False,
         "nicht"),
    Verb("repair", "repairs", "repairing", "repaired", ("repariere", "repariert", "reparieren"),
         "repariert", ("device", "vehicle"), True, True, "nicht"),
    Verb("open", "opens", "opening", "opened", ("öffne", "öffnet", "öffnen"), "geöffnet",
         ("file", "mail"), False, True, "nicht"),
    Verb("save", "saves", "saving", "saved", ("speichere", "speichert", "speichern"), "gespeichert",
         ("file", "data"), True, True, "nicht"),
    Verb("delete", "deletes", "deleting", "deleted", ("lösche", "löscht", "löschen"), "gelöscht",
         ("file", "data", "digital"), True, True, "nicht"),
    Verb("send", "sends", "sending", "sent", ("schicke", "schickt", "schicken"), "geschickt",
         ("mail", "file"), True, True, "nicht"),
    Verb("translate", "translates", "translating", "translated",
         ("übersetze", "übersetzt", "übersetzen"), "übersetzt", ("book", "doc"), True, True,
         "nicht"),
    Verb("wear", "wears", "wearing", "wore", ("trage", "trägt", "tragen"), "getragen",
         ("clothing",), False, False, "nicht"),
    Verb("analyze", "analyzes", "analyzing", "analyzed",
         ("analysiere", "analysiert", "analysieren"), "analysiert", ("data",), True, True, ""),
    Verb("collect", "collects", "collecting", "collected", ("sammle", "sammelt", "sammeln"),
         "gesammelt", ("data",), True, False, ""),
]


@dataclass(frozen=True)
class SVO:
    s: Subj
    v: Verb
    noun: Noun
    det: str
    adj: Adj | None

    @property
    def en_obj(self) -> str:
        return en_np(self.noun, self.det, self.adj)

    @property
    def de_obj(self) -> str:
        return de_np(self.noun, "acc", self.det, self.adj)

    @property
    def de_verb(self) -> str:
        return form(self.v.de, self.s.p)

    def en_present(self, prog: bool) -> str:
        if prog and self.v.ing:
            return f"{self.s.en} {BE_EN[self.s.p]} {self.v.ing} {self.en_obj}"
        return f"{self.s.en} {en_pres(self.v.en, self.v.en3, self.s.p)} {self.en_obj}"


def pick_svo(
    rng: random.Random,
    need: Callable[[Verb], bool] | None = None,
    dets: Sequence[str] | None = None,
) -> SVO:
    """Pick a semantically compatible subject, verb and object.

    need: predicate on the verb; dets: allowed determiners (default: all).
    """
    while True:
        v = rng.choice(VERBS)
        if need and not need(v):
            continue
        s = rng.choice(SUBJECTS)
        if s.kind == "org" and not v.org:
            continue
        if v.en == "wear" and s.p in ("1pl", "3pl"):  # "they wear a shirt" sounds odd
            continue
        cats = [c for c in v.cats if s.kind == "person" or c in ORG_CATS]
        nouns = [n for n in OBJECTS if set(n.cats) & set(cats)]
        if not nouns:
            continue
        noun = rng.choice(nouns)
        options = ["def", "def", "this"] + (["a", "a", "a"] if noun.count else ["bare", "bare"])
        if v.poss:
            options += ["our"] if s.kind == "org" else ["my", "our", "his", "her"]
        if dets:
            options = [d for d in options if d in dets]
            if not options:
                continue
        det = rng.choice(options)
        adj = None
        if rng.random() < (0.65 if det == "bare" else 0.5):
            adj = ADJ[rng.choice(NOUN_ADJ.get(noun.en) or ADJ_BY_CAT[noun.cats[0]])]
        return SVO(s, v, noun, det, adj)


# ---------------------------------------------------------------------------
# Templates.  Each returns one (English, German) pair.
# ---------------------------------------------------------------------------


def t_svo_present(rng: random.Random) -> Pair:
    x = pick_svo(rng)
    prog = bool(x.v.ing) and rng.random() < 0.45
    en = x.en_present(prog)
    de = f"{x.s.de} {x.de_verb} {x.de_obj}"
    if prog and rng.random() < 0.4:
        en_adv, de_adv = rng.choice(
            [("right now", "gerade"), ("today", "heute"), ("at the moment", "gerade")]
        )
        en = f"{en} {en_adv}"
        de = f"{x.s.de} {x.de_verb} {de_adv} {x.de_obj}"
    return cap(en) + ".", cap(de) + "."


PAST_TIMES = [
    ("yesterday", "gestern"),
    ("last week", "letzte Woche"),
    ("this morning", "heute Morgen"),
    ("last year", "letztes Jahr"),
    ("on Saturday", "am Samstag"),
    ("last night", "gestern Abend"),
    ("two days ago", "vor zwei Tagen"),
    ("last month", "letzten Monat"),
]


def t_svo_perfect(rng: random.Random) -> Pair:
    x = pick_svo(rng, need=lambda v: bool(v.part))
    t_en, t_de = rng.choice(PAST_TIMES)
    aux = form(HABEN, x.s.p)
    if rng.random() < 0.5:
        en = f"{t_en} {x.s.en} {x.v.past} {x.en_obj}"
        de = f"{t_de} {aux} {x.s.de} {x.de_obj} {x.v.part}"
    else:
        en = f"{x.s.en} {x.v.past} {x.en_obj} {t_en}"
        de = f"{x.s.de} {aux} {t_de} {x.de_obj} {x.v.part}"
    return cap(en) + ".", cap(de) + "."


MODALS = [
    # English (base, 3sg), German (1sg, 3sg, pl), English question form
    (("want to", "wants to"), ("will", "will", "wollen"), "want"),
    (("have to", "has to"), ("muss", "muss", "müssen"), "have"),
    (("can", "can"), ("kann", "kann", "können"), "can"),
    (("would like to", "would like to"), ("möchte", "möchte", "möchten"), "would"),
]


def no_modal(v: Verb) -> bool:
    return v.en not in ("need", "have")


def t_modal(rng: random.Random) -> Pair:
    x = pick_svo(rng, need=no_modal)
    (en_b, en_3), de_forms, _ = rng.choice(MODALS)
    en = f"{x.s.en} {en_pres(en_b, en_3, x.s.p)} {x.v.en} {x.en_obj}"
    de = f"{x.s.de} {form(de_forms, x.s.p)} {x.de_obj} {x.v.de[2]}"
    return cap(en) + ".", cap(de) + "."


def t_negation(rng: random.Random) -> Pair:
    if rng.random() < 0.5:
        x = pick_svo(rng, need=lambda v: v.neg == "kein", dets=("a",))
        if x.noun.count:
            en_obj = x.en_obj
        else:
            en_obj = "any " + en_np(x.noun, "bare", x.adj)
        en = f"{x.s.en} {en_do(x.s.p)}n't {x.v.en} {en_obj}"
        de = f"{x.s.de} {x.de_verb} {de_np(x.noun, 'acc', 'no', x.adj)}"
    else:
        x = pick_svo(
            rng, need=lambda v: v.neg == "nicht", dets=("def", "this", "my", "our", "his", "her")
        )
        en = f"{x.s.en} {en_do(x.s.p)}n't {x.v.en} {x.en_obj}"
        de = f"{x.s.de} {x.de_verb} {x.de_obj} nicht"
    return cap(en) + ".", cap(de) + "."


def t_question(rng: random.Random) -> Pair:
    r = rng.random()
    x = pick_svo(rng)
    if r < 0.45:
        if x.v.ing and rng.random() < 0.4:
            en = f"{BE_EN[x.s.p]} {x.s.en} {x.v.ing} {x.en_obj}"
        else:
            en = f"{en_do(x.s.p)} {x.s.en} {x.v.en} {x.en_obj}"
        de = f"{x.de_verb} {x.s.de} {x.de_obj}"
    elif r < 0.7 and x.s.p != "1sg":
        en = f"why {en_do(x.s.p)} {x.s.en} {x.v.en} {x.en_obj}"
        de = f"warum {x.de_verb} {x.s.de} {x.de_obj}"
    elif not no_modal(x.v):
        return t_question(rng)
    else:
        _, de_forms, kind = rng.choice(MODALS if x.s.p != "1sg" else MODALS[1:3])
        if kind == "want":
            en = f"{en_do(x.s.p)} {x.s.en} want to {x.v.en} {x.en_obj}"
        elif kind == "have":
            en = f"{en_do(x.s.p)} {x.s.en} have to {x.v.en} {x.en_obj}"
        elif kind == "can":
            en = f"can {x.s.en} {x.v.en} {x.en_obj}"
        else:
            en = f"would {x.s.en} like to {x.v.en} {x.en_obj}"
        de = f"{form(de_forms, x.s.p)} {x.s.de} {x.de_obj} {x.v.de[2]}"
    return cap(en) + "?", cap(de) + "?"


MATRIX = [
    ("I think", "Ich glaube"),
    ("I know", "Ich weiß"),
    ("I hope", "Ich hoffe"),
    ("she says", "Sie sagt"),
    ("he thinks", "Er denkt"),
    ("we know", "Wir wissen"),
    ("it is true", "Es stimmt"),
    ("I am sure", "Ich bin sicher"),
    ("my mother says", "Meine Mutter sagt"),
    ("Tom thinks", "Tom glaubt"),
    ("it is good", "Es ist gut"),
    ("Anna says", "Anna sagt"),
]
MATRIX_OB = [
    ("I don't know", "Ich weiß nicht"),
    ("she asks", "Sie fragt"),
    ("we wonder", "Wir fragen uns"),
    ("I am not sure", "Ich bin nicht sicher"),
    ("nobody knows", "Niemand weiß"),
]


def t_subordinate(rng: random.Random) -> Pair:
    if rng.random() < 0.75:
        m_en, m_de = rng.choice(MATRIX)
        conj_en, conj_de = "that", "dass"
    else:
        m_en, m_de = rng.choice(MATRIX_OB)
        conj_en, conj_de = "if", "ob"
    r = rng.random()
    if r < 0.45:
        x = pick_svo(rng)
        en_c = x.en_present(rng.random() < 0.4)
        de_c = f"{x.s.de} {x.de_obj} {x.de_verb}"
    elif r < 0.75:
        x = pick_svo(rng, need=lambda v: bool(v.part))
        en_c = f"{x.s.en} {x.v.past} {x.en_obj}"
        de_c = f"{x.s.de} {x.de_obj} {x.v.part} {form(HABEN, x.s.p)}"
    else:
        x = pick_svo(rng, need=no_modal)
        modals = MODALS if m_en != "I hope" else [m for m in MODALS if m[2] != "have"]
        (en_b, en_3), de_forms, _ = rng.choice(modals)
        en_c = f"{x.s.en} {en_pres(en_b, en_3, x.s.p)} {x.v.en} {x.en_obj}"
        de_c = f"{x.s.de} {x.de_obj} {x.v.de[2]} {form(de_forms, x.s.p)}"
    if x.s.en.lower() in m_en.lower():  # "my mother says that my mother ..."
        return t_subordinate(rng)
    en = f"{cap(m_en)} {conj_en} {en_c}."
    de = f"{m_de}, {conj_de} {de_c}."
    return en, de


# reason clauses: (English, German verb-final); actions: (English, subject, verb, rest)
BECAUSE = {
    "weather": (
        [
            ("it is raining", "es regnet"),
            ("it is snowing", "es schneit"),
            ("it is too cold", "es zu kalt ist"),
            ("it is very windy", "es sehr windig ist"),
            ("the weather is bad", "das Wetter schlecht ist"),
            ("a storm is coming", "ein Sturm kommt"),
        ],
        [
            ("we are staying at home", "wir", "bleiben", "zu Hause"),
            ("I am taking the bus", "ich", "nehme", "den Bus"),
            ("the children are playing inside", "die Kinder", "spielen", "drinnen"),
            ("the game is cancelled", "das Spiel", "fällt", "aus"),
            ("she is wearing a warm coat", "sie", "trägt", "einen warmen Mantel"),
            ("we are not going to the beach", "wir", "gehen", "nicht an den Strand"),
            ("my father is driving slowly", "mein Vater", "fährt", "langsam"),
        ],
    ),
    "net": (
        [
            ("the internet is slow", "das Internet langsam ist"),
            ("the server is down", "der Server ausgefallen ist"),
            ("the Wi-Fi is not working", "das WLAN nicht funktioniert"),
            ("the connection is unstable", "die Verbindung instabil ist"),
        ],
        [
            ("I cannot send the email", "ich", "kann", "die E-Mail nicht schicken"),
            ("the video is not loading", "das Video", "lädt", "nicht"),
            ("the website is not working", "die Website", "funktioniert", "nicht"),
            ("we have to wait", "wir", "müssen", "warten"),
            ("she is working offline today", "sie", "arbeitet", "heute offline"),
            ("the meeting is starting later", "das Meeting", "beginnt", "später"),
        ],
    ),
    "tired": (
        [
            ("I am tired", "ich müde bin"),
            ("I slept badly", "ich schlecht geschlafen habe"),
            ("I worked late yesterday", "ich gestern lange gearbeitet habe"),
        ],
        [
            ("I am going to bed early", "ich", "gehe", "früh ins Bett"),
            ("I am drinking a strong coffee", "ich", "trinke", "einen starken Kaffee"),
            ("I am staying at home today", "ich", "bleibe", "heute zu Hause"),
            ("I cannot concentrate", "ich", "kann", "mich nicht konzentrieren"),
        ],
    ),
    "late": (
        [
            ("the train is late", "der Zug Verspätung hat"),
            ("the bus is not coming", "der Bus nicht kommt"),
            ("there is a lot of traffic", "viel Verkehr ist"),
        ],
        [
            ("I am late for work", "ich", "komme", "zu spät zur Arbeit"),
            ("we are taking a taxi", "wir", "nehmen", "ein Taxi"),
            ("we are missing the start of the film", "wir", "verpassen", "den Anfang des Films"),
            ("my sister is walking to work", "meine Schwester", "geht", "zu Fuß zur Arbeit"),
        ],
    ),
    "model": (
        [
            ("the model is too large", "das Modell zu groß ist"),
            ("the data is incomplete", "die Daten unvollständig sind"),
            ("the training takes too long", "das Training zu lange dauert"),
            ("the GPU has too little memory", "die GPU zu wenig Speicher hat"),
        ],
        [
            ("we are training a smaller model", "wir", "trainieren", "ein kleineres Modell"),
            ("the results are not good", "die Ergebnisse", "sind", "nicht gut"),
            ("we need a new computer", "wir", "brauchen", "einen neuen Computer"),
            ("the translation is still bad", "die Übersetzung", "ist", "noch schlecht"),
            ("we are collecting more data", "wir", "sammeln", "mehr Daten"),
        ],
    ),
    "hungry": (
        [("I am hungry", "ich Hunger habe"), ("the fridge is empty", "der Kühlschrank leer ist")],
        [
            ("I am going to the supermarket", "ich", "gehe", "zum Supermarkt"),
            ("we are ordering a pizza", "wir", "bestellen", "eine Pizza"),
            ("I am making a sandwich", "ich", "mache", "mir ein Sandwich"),
        ],
    ),
}


def t_because(rng: random.Random) -> Pair:
    reasons, actions = BECAUSE[rng.choice(list(BECAUSE))]
    r_en, r_de = rng.choice(reasons)
    a_en, subj, verb, rest = rng.choice(actions)
    if rng.random() < 0.6:
        return f"{cap(a_en)} because {r_en}.", f"{cap(subj)} {verb} {rest}, weil {r_de}."
    return f"Because {r_en}, {a_en}.", f"Weil {r_de}, {verb} {subj} {rest}."


# things one can love or like: (English, German accusative, "interested in" ok)
LOVED = [
    ("machine learning", "maschinelles Lernen", True),
    ("music", "Musik", True),
    ("coffee", "Kaffee", False),
    ("green tea", "grünen Tee", False),
    ("chocolate", "Schokolade", False),
    ("books", "Bücher", True),
    ("pizza", "Pizza", False),
    ("summer", "den Sommer", False),
    ("winter", "den Winter", False),
    ("the sea", "das Meer", False),
    ("the mountains", "die Berge", False),
    ("this city", "diese Stadt", False),
    ("this song", "dieses Lied", False),
    ("languages", "Sprachen", True),
    ("the German language", "die deutsche Sprache", True),
    ("mathematics", "Mathematik", True),
    ("computers", "Computer", True),
    ("old films", "alte Filme", True),
    ("Italian food", "italienisches Essen", False),
    ("fresh bread", "frisches Brot", False),
    ("cats", "Katzen", False),
    ("dogs", "Hunde", False),
    ("soccer", "Fußball", True),
    ("jazz", "Jazz", True),
    ("open-source software", "Open-Source-Software", True),
    ("programming", "das Programmieren", True),
    ("statistics", "Statistik", True),
    ("history", "Geschichte", True),
    ("art", "Kunst", True),
    ("politics", "Politik", True),
    ("technology", "Technik", True),
    ("artificial intelligence", "künstliche Intelligenz", True),
    ("machine translation", "maschinelle Übersetzung", True),
    ("data science", "Datenwissenschaft", True),
    ("good coffee", "guten Kaffee", False),
    ("the rain", "den Regen", False),
    ("old computers", "alte Computer", True),
]
REFL = {"1sg": "mich", "1pl": "uns", "3sg": "sich", "3pl": "sich"}
INTERESSIEREN = ("interessiere", "interessiert", "interessieren")


def t_love(rng: random.Random) -> Pair:
    s = person(rng, i_weight=0.45)
    weights = [8 if o[0] == "machine learning" else 1 for o in LOVED]
    o_en, o_de, interest = pick(rng, LOVED, weights)
    r = rng.random()
    if r < 0.45:
        en = f"{s.en} {en_pres('love', 'loves', s.p)} {o_en}"
        de = f"{s.de} {form(('liebe', 'liebt', 'lieben'), s.p)} {o_de}"
    elif r < 0.65:
        en = f"{s.en} {en_pres('like', 'likes', s.p)} {o_en}"
        de = f"{s.de} {form(('mag', 'mag', 'mögen'), s.p)} {o_de}"
    elif r < 0.8:
        en = f"{s.en} really {en_pres('like', 'likes', s.p)} {o_en}"
        de = f"{s.de} {form(('mag', 'mag', 'mögen'), s.p)} {o_de} sehr"
    elif interest:
        en = f"{s.en} {BE_EN[s.p]} interested in {o_en}"
        de = f"{s.de} {form(INTERESSIEREN, s.p)} {REFL[s.p]} für {o_de}"
    else:
        en = f"{s.en} {en_pres('love', 'loves', s.p)} {o_en}"
        de = f"{s.de} {form(('liebe', 'liebt', 'lieben'), s.p)} {o_de}"
    return cap(en) + ".", cap(de) + "."


# hobbies: (English -ing form, German verb forms, rest)
HOBBIES = [
    ("reading", ("lese", "liest", "lesen"), ""),
    ("cooking", ("koche", "kocht", "kochen"), ""),
    ("swimming", ("schwimme", "schwimmt", "schwimmen"), ""),
    ("dancing", ("tanze", "tanzt", "tanzen"), ""),
    ("hiking", ("wandere", "wandert", "wandern"), ""),
    ("singing", ("singe", "singt", "singen"), ""),
    ("painting", ("male", "malt", "malen"), ""),
    ("traveling", ("reise", "reist", "reisen"), ""),
    ("programming", ("programmiere", "programmiert", "programmieren"), ""),
    ("baking", ("backe", "backt", "backen"), ""),
    ("playing chess", ("spiele", "spielt", "spielen"), "Schach"),
    ("playing the piano", ("spiele", "spielt", "spielen"), "Klavier"),
    ("playing soccer", ("spiele", "spielt", "spielen"), "Fußball"),
    ("playing video games", ("spiele", "spielt", "spielen"), "Videospiele"),
    ("cycling", ("fahre", "fährt", "fahren"), "Fahrrad"),
    ("taking photos", ("fotografiere", "fotografiert", "fotografieren"), ""),
    ("learning languages", ("lerne", "lernt", "lernen"), "Sprachen"),
    ("gardening", ("arbeite", "arbeitet", "arbeiten"), "im Garten"),
    ("running", ("laufe", "läuft", "laufen"), ""),
    ("writing", ("schreibe", "schreibt", "schreiben"), ""),
    ("working with computers", ("arbeite", "arbeitet", "arbeiten"), "mit Computern"),
    ("translating texts", ("übersetze", "übersetzt", "übersetzen"), "Texte"),
]


def t_hobby(rng: random.Random) -> Pair:
    s = person(rng, i_weight=0.3)
    h_en, forms, rest = rng.choice(HOBBIES)
    verb = form(forms, s.p)
    r = rng.random()
    if r < 0.4:
        en = f"{s.en} {en_pres('like', 'likes', s.p)} {h_en}"
        adv = "gern"
    elif r < 0.7:
        en = f"{s.en} {en_pres('love', 'loves', s.p)} {h_en}"
        adv = "sehr gern"
    else:
        en = f"{s.en} {en_do(s.p)}n't like {h_en}"
        adv = "nicht gern"
    de = " ".join(w for w in (s.de, verb, adv, rest) if w)
    return cap(en) + ".", cap(de) + "."


# fields: English, German nom/acc, German dative, flags
Field = tuple[str, str, str, str]
FIELDS: list[Field] = [
    ("machine learning", "maschinelles Lernen", "maschinellem Lernen", "study big"),
    ("statistics", "Statistik", "Statistik", "study"),
    ("computer science", "Informatik", "Informatik", "study"),
    ("mathematics", "Mathematik", "Mathematik", "study"),
    ("linguistics", "Linguistik", "Linguistik", "study"),
    ("data analysis", "Datenanalyse", "Datenanalyse", "big"),
    ("artificial intelligence", "künstliche Intelligenz", "künstlicher Intelligenz", "big"),
    ("machine translation", "maschinelle Übersetzung", "maschineller Übersetzung", "big"),
    ("deep learning", "Deep Learning", "Deep Learning", "big"),
    (
        "natural language processing",
        "maschinelle Sprachverarbeitung",
        "maschineller Sprachverarbeitung",
        "big",
    ),
    ("programming", "das Programmieren", "dem Programmieren", ""),
]
FIELD_ADJ = [
    ("fascinating", "faszinierend"),
    ("important", "wichtig"),
    ("difficult", "schwierig"),
    ("useful", "nützlich"),
    ("exciting", "spannend"),
    ("not easy", "nicht einfach"),
    ("very popular", "sehr beliebt"),
    ("interesting", "interessant"),
    ("really exciting", "wirklich spannend"),
]


# sentences about a person and a field: English verb, rest, German verb forms, rest
FIELD_SENTENCES: list[PersonSentence] = [
    (("study", "studies"), "{f}", ("studiere", "studiert", "studieren"), "{f}"),
    ("be", "interested in {f}", INTERESSIEREN, "{refl} für {f}"),
    ("be", "reading a book about {f}", ("lese", "liest", "lesen"), "ein Buch über {f}"),
    (("have", "has"), "a lot of experience with {f}", HABEN, "viel Erfahrung mit {dat}"),
    (("want", "wants"), "to learn more about {f}", ("möchte", "möchte", "möchten"),
     "mehr über {f} lernen"),
    ("be", "giving a talk on {f} tomorrow", ("halte", "hält", "halten"),
     "morgen einen Vortrag über {f}"),
    ("be", "writing an article about {f}", ("schreibe", "schreibt", "schreiben"),
     "einen Artikel über {f}"),
]


def t_field(rng: random.Random) -> Pair:
    weights = [6 if f[0] == "machine learning" else 1 for f in FIELDS]
    field = pick(rng, FIELDS, weights)
    s = person(rng, i_weight=0.3)
    k = rng.randrange(11)
    if k < 7 and (k > 0 or "study" in field[3]):
        return field_person(s, k, field)
    return field_topic(rng, k, field)


def field_person(s: Subj, k: int, field: Field) -> Pair:
    """Sentence `k` (0 to 6) about a person and a field of study or work."""
    f_en, f_de, f_dat, _ = field
    return person_sentence(s, FIELD_SENTENCES[k], {"f": f_en},
                           {"f": f_de, "dat": f_dat, "refl": REFL[s.p]})


def field_topic(rng: random.Random, k: int, field: Field) -> Pair:
    """Sentence `k` about a field itself; the last one fits every field."""
    f_en, f_de, _, flags = field
    if k == 7:
        a_en, a_de = rng.choice(FIELD_ADJ)
        return cap(f"{f_en} is {a_en}."), cap(f"{f_de} ist {a_de}.")
    if k == 8:
        if rng.random() < 0.5:
            return cap(f"{f_en} is fun."), cap(f"{f_de} macht Spaß.")
        return cap(f"{f_en} is a lot of fun."), cap(f"{f_de} macht viel Spaß.")
    if k == 9 and "big" in flags:
        if rng.random() < 0.5:
            return cap(f"{f_en} is changing the world."), cap(f"{f_de} verändert die Welt.")
        return f"Many companies use {f_en}.", f"Viele Firmen nutzen {f_de}."
    return (
        f"There is a course on {f_en} at our university.",
        f"An unserer Universität gibt es einen Kurs über {f_de}.",
    )


# predicate adjectives: en, de, en comparative, de comparative, gradable, "too" ok
PADJ = {
    "fast": ("fast", "schnell", "faster", "schneller", True, True),
    "slow": ("slow", "langsam", "slower", "langsamer", True, True),
    "large": ("large", "groß", "larger", "größer", True, True),
    "small": ("small", "klein", "smaller", "kleiner", True, True),
    "good": ("good", "gut", "better", "besser", True, False),
    "accurate": ("accurate", "genau", "more accurate", "genauer", True, False),
    "correct": ("correct", "korrekt", "", "", False, False),
    "wrong": ("wrong", "falsch", "", "", False, False),
    "new": ("new", "neu", "", "", False, False),
    "old": ("old", "alt", "", "", True, True),
    "expensive": ("expensive", "teuer", "more expensive", "teurer", True, True),
    "cheap": ("cheap", "billig", "cheaper", "billiger", True, False),
    "broken": ("broken", "kaputt", "", "", False, False),
    "loud": ("loud", "laut", "louder", "lauter", True, True),
    "light": ("light", "leicht", "lighter", "leichter", True, False),
    "heavy": ("heavy", "schwer", "heavier", "schwerer", True, True),
    "stable": ("stable", "stabil", "more stable", "stabiler", True, False),
    "secure": ("secure", "sicher", "more secure", "sicherer", True, False),
    "empty": ("empty", "leer", "", "", False, False),
    "full": ("full", "voll", "", "", False, False),
    "short": ("short", "kurz", "shorter", "kürzer", True, True),
    "long": ("long", "lang", "longer", "länger", True, True),
    "simple": ("simple", "einfach", "simpler", "einfacher", True, True),
    "free": ("free", "kostenlos", "", "", False, False),
    "useful": ("useful", "nützlich", "more useful", "nützlicher", True, False),
    "popular": ("popular", "beliebt", "more popular", "beliebter", True, False),
    "clean": ("clean", "sauber", "cleaner", "sauberer", True, False),
    "incomplete": ("incomplete", "unvollständig", "", "", False, False),
    "important": ("important", "wichtig", "", "", True, False),
    "fluent": ("fluent", "flüssig", "more fluent", "flüssiger", True, False),
    "ready": ("ready", "fertig", "", "", False, False),
    "public": ("public", "öffentlich", "", "", False, False),
    "modern": ("modern", "modern", "more modern", "moderner", True, False),
    "hot": ("hot", "heiß", "hotter", "heißer", True, True),
    "cold": ("cold", "kalt", "colder", "kälter", True, True),
    "strong": ("strong", "stark", "stronger", "stärker", True, True),
    "salty": ("salty", "salzig", "saltier", "salziger", True, True),
    "bright": ("bright", "hell", "brighter", "heller", True, True),
    "narrow": ("narrow", "eng", "narrower", "enger", True, True),
    "quiet": ("quiet", "ruhig", "quieter", "ruhiger", True, True),
    "beautiful": ("beautiful", "schön", "more beautiful", "schöner", True, False),
    "dark": ("dark", "dunkel", "darker", "dunkler", True, True),
    "delicious": ("delicious", "lecker", "", "", True, False),
}

# (noun, adjective keys, comparative template allowed)
PRED = [
    (
        Noun("model", "Modell", "n"),
        ["accurate", "fast", "slow", "large", "small", "good", "ready"],
        True,
    ),
    (
        Noun("translation", "Übersetzung", "f"),
        ["good", "correct", "wrong", "accurate", "fluent"],
        True,
    ),
    (
        Noun("data", "Daten", "pl", count=False),
        ["incomplete", "correct", "new", "clean", "important", "old"],
        True,
    ),
    (
        Noun("computer", "Computer", "m"),
        ["slow", "fast", "new", "old", "expensive", "broken", "loud"],
        True,
    ),
    (
        Noun("laptop", "Laptop", "m"),
        ["slow", "fast", "new", "old", "expensive", "broken", "light", "heavy"],
        True,
    ),
    (Noun("phone", "Handy", "n"), ["new", "old", "broken", "expensive", "cheap", "fast"], True),
    (Noun("website", "Website", "f"), ["slow", "new", "fast", "modern"], True),
    (Noun("internet connection", "Internetverbindung", "f"), ["slow", "fast", "stable"], True),
    (Noun("password", "Passwort", "n"), ["short", "wrong", "secure", "long"], True),
    (Noun("file", "Datei", "f"), ["large", "empty", "new", "old", "important"], False),
    (Noun("battery", "Akku", "m"), ["empty", "full", "new", "old"], False),
    (Noun("program", "Programm", "n"), ["slow", "fast", "new", "simple", "free"], True),
    (Noun("app", "App", "f"), ["free", "new", "slow", "useful", "popular"], True),
    (Noun("keyboard", "Tastatur", "f"), ["new", "old", "loud"], True),
    (Noun("server", "Server", "m"), ["slow", "fast", "new", "old"], True),
    (
        Noun("language model", "Sprachmodell", "n"),
        ["large", "small", "new", "good", "accurate"],
        True,
    ),
    (
        Noun("translation model", "Übersetzungsmodell", "n"),
        ["good", "fast", "accurate", "ready", "new"],
        True,
    ),
    (Noun("printer", "Drucker", "m"), ["broken", "new", "old", "loud"], True),
    (Noun("dataset", "Datensatz", "m"), ["large", "small", "new", "clean", "public"], True),
    (Noun("code", "Code", "m", count=False), ["correct", "wrong", "simple", "clean", "new"], True),
    (
        Noun("documentation", "Dokumentation", "f", count=False),
        ["good", "short", "long", "useful", "incomplete"],
        True,
    ),
    (Noun("screen", "Bildschirm", "m"), ["large", "small", "dark", "bright"], True),
    (
        Noun("headphones", "Kopfhörer", "pl", en_pl=True),
        ["new", "old", "expensive", "broken"],
        True,
    ),
    (Noun("coffee", "Kaffee", "m", count=False), ["hot", "cold", "strong", "good"], False),
    (Noun("soup", "Suppe", "f"), ["hot", "cold", "salty", "delicious"], False),
    (Noun("room", "Zimmer", "n"), ["small", "large", "bright", "clean", "quiet"], True),
    (
        Noun("apartment", "Wohnung", "f"),
        ["small", "large", "bright", "expensive", "cheap", "quiet"],
        True,
    ),
    (Noun("street", "Straße", "f"), ["long", "narrow", "quiet", "dark"], False),
    (Noun("city", "Stadt", "f"), ["large", "small", "beautiful", "quiet", "loud"], False),
    (Noun("water", "Wasser", "n", count=False), ["cold", "hot", "clean"], False),
]

INTENS = [
    ("", ""),
    ("very", "sehr"),
    ("really", "wirklich"),
    ("quite", "ziemlich"),
    ("not", "nicht"),
    ("too", "zu"),
]


def t_pred(rng: random.Random) -> Pair:
    noun, keys, _ = rng.choice(PRED)
    a_en, a_de, _, _, gradable, too_ok = PADJ[rng.choice(keys)]
    det = rng.choice(["def", "def", "this", "my", "our", "her", "his"])
    if gradable:
        options = [i for i in INTENS if i[0] != "too" or too_ok]
    else:
        options = INTENS[:1] + [("not", "nicht")]
    i_en, i_de = rng.choice(options)
    past = rng.random() < 0.2
    pl_en, pl_de = noun.en_pl, noun.g == "pl"
    if past:
        be_en, be_de = ("were" if pl_en else "was"), ("waren" if pl_de else "war")
    else:
        be_en, be_de = ("are" if pl_en else "is"), ("sind" if pl_de else "ist")
    np_en, np_de = en_np(noun, det), de_np(noun, "nom", det)
    adj_en = f"{i_en} {a_en}".strip()
    adj_de = f"{i_de} {a_de}".strip()
    if rng.random() < 0.2 and i_en in ("", "very", "too"):
        return cap(f"{be_en} {np_en} {adj_en}?"), cap(f"{be_de} {np_de} {adj_de}?")
    return cap(f"{np_en} {be_en} {adj_en}."), cap(f"{np_de} {be_de} {adj_de}.")


def t_comparative(rng: random.Random) -> Pair:
    noun, keys, ok = rng.choice(PRED)
    keys = [k for k in keys if PADJ[k][2]]
    if not ok or not keys:
        return t_pred(rng)
    _, _, c_en, c_de, _, _ = PADJ[rng.choice(keys)]
    new, old = ADJ["new"], ADJ["old"]
    pl_de = noun.g == "pl"
    be_en, be_de = ("are" if noun.en_pl else "is"), ("sind" if pl_de else "ist")
    if noun.en_pl:
        rest_en = "the old ones"
    elif not noun.count:
        rest_en = f"the old {noun.en}"
    else:
        rest_en = "the old one"
    rest_de = f"{DEF['nom'][noun.g]} {old.inflect(WEAK['nom'][noun.g])}"
    much_en, much_de = ("much ", "viel ") if rng.random() < 0.35 else ("", "")
    det = rng.choice(["def", "def", "our", "my"])
    np_en = en_np(noun, det, new)
    np_de = de_np(noun, "nom", det, new)
    return (
        cap(f"{np_en} {be_en} {much_en}{c_en} than {rest_en}."),
        cap(f"{np_de} {be_de} {much_de}{c_de} als {rest_de}."),
    )


# things that get lost at home
ITEMS = [
    Noun("keys", "Schlüssel", "pl", en_pl=True),
    Noun("phone", "Handy", "n"),
    Noun("laptop", "Laptop", "m"),
    Noun("glasses", "Brille", "f", en_pl=True),
    Noun("wallet", "Geldbörse", "f"),
    Noun("umbrella", "Regenschirm", "m"),
    Noun("charger", "Ladegerät", "n"),
    Noun("passport", "Reisepass", "m"),
    Noun("book", "Buch", "n"),
    Noun("jacket", "Jacke", "f"),
    Noun("headphones", "Kopfhörer", "pl", en_pl=True),
    Noun("tablet", "Tablet", "n"),
    Noun("notebook", "Notizbuch", "n"),
    Noun("bag", "Tasche", "f"),
    Noun("cat", "Katze", "f", ("animal",)),
    Noun("dog", "Hund", "m", ("animal",)),
]
LOCATIONS = [
    ("in the kitchen", "in der Küche", True),
    ("in the living room", "im Wohnzimmer", True),
    ("in the office", "im Büro", False),
    ("in the car", "im Auto", True),
    ("in the drawer", "in der Schublade", False),
    ("in the garden", "im Garten", True),
    ("in the bedroom", "im Schlafzimmer", True),
    ("in the hallway", "im Flur", True),
    ("on the table", "auf dem Tisch", False),
    ("on the desk", "auf dem Schreibtisch", False),
    ("on the sofa", "auf dem Sofa", True),
    ("under the bed", "unter dem Bett", True),
    ("next to the door", "neben der Tür", True),
    ("in my backpack", "in meinem Rucksack", False),
]


def t_where(rng: random.Random) -> Pair:
    item = rng.choice(ITEMS)
    locs = [x for x in LOCATIONS if x[2]] if "animal" in item.cats else LOCATIONS
    if item.en == "bag":
        locs = [x for x in locs if "backpack" not in x[0] and "drawer" not in x[0]]
    l_en, l_de, _ = rng.choice(locs)
    det = rng.choice(["my", "my", "his", "her", "our", "def"])
    np_en, np_nom, np_acc = en_np(item, det), de_np(item, "nom", det), de_np(item, "acc", det)
    be_en = "are" if item.en_pl else "is"
    be_de = "sind" if item.g == "pl" else "ist"
    k = rng.randrange(7)
    if k == 0:
        return cap(f"{np_en} {be_en} {l_en}."), cap(f"{np_nom} {be_de} {l_de}.")
    if k == 1:
        return f"Where {be_en} {np_en}?", f"Wo {be_de} {np_nom}?"
    if k == 2:
        return cap(f"{be_en} {np_en} {l_en}?"), cap(f"{be_de} {np_nom} {l_de}?")
    if k == 3:
        return f"I think {np_en} {be_en} {l_en}.", f"Ich glaube, {np_nom} {be_de} {l_de}."
    if k == 4:
        return cap(f"{np_en} {be_en} not {l_en}."), cap(f"{np_nom} {be_de} nicht {l_de}.")
    if k == 5:
        return f"I can't find {np_en}.", f"Ich finde {np_acc} nicht."
    return f"Have you seen {np_en}?", f"Hast du {np_acc} gesehen?"


CITIES = [
    ("Berlin", "Berlin"),
    ("Hamburg", "Hamburg"),
    ("Munich", "München"),
    ("Vienna", "Wien"),
    ("Zurich", "Zürich"),
    ("Cologne", "Köln"),
    ("Frankfurt", "Frankfurt"),
    ("Leipzig", "Leipzig"),
    ("Dresden", "Dresden"),
    ("Bremen", "Bremen"),
    ("Stuttgart", "Stuttgart"),
    ("London", "London"),
    ("Paris", "Paris"),
    ("Rome", "Rom"),
    ("Prague", "Prag"),
    ("Lisbon", "Lissabon"),
    ("Madrid", "Madrid"),
    ("Amsterdam", "Amsterdam"),
    ("Copenhagen", "Kopenhagen"),
    ("Warsaw", "Warschau"),
    ("Athens", "Athen"),
    ("Stockholm", "Stockholm"),
    ("Brussels", "Brüssel"),
    ("Milan", "Mailand"),
    ("Venice", "Venedig"),
    ("Geneva", "Genf"),
    ("Tokyo", "Tokio"),
    ("New York", "New York"),
]

# family members: noun, male?, (min age, max age)
MEMBERS = [
    (Noun("brother", "Bruder", "m"), True, (4, 45)),
    (Noun("sister", "Schwester", "f"), False, (4, 45)),
    (Noun("father", "Vater", "m"), True, (35, 75)),
    (Noun("mother", "Mutter", "f"), False, (35, 75)),
    (Noun("son", "Sohn", "m"), True, (2, 30)),
    (Noun("daughter", "Tochter", "f"), False, (2, 30)),
    (Noun("grandmother", "Großmutter", "f"), False, (60, 95)),
    (Noun("grandfather", "Großvater", "m"), True, (60, 95)),
    (Noun("uncle", "Onkel", "m"), True, (30, 70)),
    (Noun("aunt", "Tante", "f"), False, (30, 70)),
    (Noun("nephew", "Neffe", "m"), True, (2, 25)),
    (Noun("niece", "Nichte", "f"), False, (2, 25)),
    (Noun("husband", "Mann", "m"), True, (25, 80)),
    (Noun("wife", "Frau", "f"), False, (25, 80)),
]
PROFESSIONS = [
    ("engineer", "Ingenieur", "Ingenieurin"),
    ("teacher", "Lehrer", "Lehrerin"),
    ("doctor", "Arzt", "Ärztin"),
    ("nurse", "Krankenpfleger", "Krankenpflegerin"),
    ("software developer", "Softwareentwickler", "Softwareentwicklerin"),
    ("cook", "Koch", "Köchin"),
    ("journalist", "Journalist", "Journalistin"),
    ("translator", "Übersetzer", "Übersetzerin"),
    ("lawyer", "Anwalt", "Anwältin"),
    ("pilot", "Pilot", "Pilotin"),
    ("architect", "Architekt", "Architektin"),
    ("baker", "Bäcker", "Bäckerin"),
    ("programmer", "Programmierer", "Programmiererin"),
    ("data scientist", "Datenwissenschaftler", "Datenwissenschaftlerin"),
    ("police officer", "Polizist", "Polizistin"),
    ("student", "Student", "Studentin"),
    ("mechanic", "Mechaniker", "Mechanikerin"),
    ("researcher", "Forscher", "Forscherin"),
    ("musician", "Musiker", "Musikerin"),
    ("farmer", "Landwirt", "Landwirtin"),
]
NUM = {
    2: ("two", "zwei"),
    3: ("three", "drei"),
    4: ("four", "vier"),
    5: ("five", "fünf"),
    6: ("six", "sechs"),
    7: ("seven", "sieben"),
    8: ("eight", "acht"),
    9: ("nine", "neun"),
    10: ("ten", "zehn"),
    11: ("eleven", "elf"),
    12: ("twelve", "zwölf"),
}


def t_family(rng: random.Random) -> Pair:
    noun, male, (lo, hi) = rng.choice(MEMBERS)
    if noun.en == "husband":
        dets = ["my", "her"]
    elif noun.en == "wife":
        dets = ["my", "his"]
    else:
        dets = ["my", "my", "our", "his", "her"]
    det = rng.choice(dets)
    np_en, np_de = cap(en_np(noun, det)), cap(de_np(noun, "nom", det))
    p_en, p_m, p_f = rng.choice(PROFESSIONS)
    prof = p_m if male else p_f
    k = rng.randrange(6)
    if k == 0:
        return f"{np_en} is {a_or_an(p_en)} {p_en}.", f"{np_de} ist {prof}."
    if k == 1:
        return f"{np_en} works as {a_or_an(p_en)} {p_en}.", f"{np_de} arbeitet als {prof}."
    if k == 2:
        c_en, c_de = rng.choice(CITIES)
        return f"{np_en} lives in {c_en}.", f"{np_de} wohnt in {c_de}."
    if k == 3:
        age = rng.randint(lo, hi)
        a_en, a_de = NUM.get(age, (str(age), str(age)))
        return f"{np_en} is {a_en} years old.", f"{np_de} ist {a_de} Jahre alt."
    if k == 4:
        return f"{np_en} wants to become {a_or_an(p_en)} {p_en}.", f"{np_de} möchte {prof} werden."
    return f"{np_en} used to be {a_or_an(p_en)} {p_en}.", f"{np_de} war früher {prof}."


WEATHER_ADJ = [
    ("sunny", "sonnig"),
    ("cold", "kalt"),
    ("warm", "warm"),
    ("hot", "heiß"),
    ("windy", "windig"),
    ("cloudy", "bewölkt"),
    ("foggy", "neblig"),
    ("very cold", "sehr kalt"),
    ("quite warm", "ziemlich warm"),
]


def t_weather(rng: random.Random) -> Pair:
    c_en, c_de = rng.choice(CITIES[:26])
    w_en, w_de = rng.choice(WEATHER_ADJ)
    k = rng.randrange(7)
    if k == 0:
        return f"It is {w_en} in {c_en} today.", f"Heute ist es in {c_de} {w_de}."
    if k == 1:
        return f"It will be {w_en} in {c_en} tomorrow.", f"Morgen wird es in {c_de} {w_de}."
    if k == 2:
        return f"It was {w_en} in {c_en} yesterday.", f"Gestern war es in {c_de} {w_de}."
    verb = rng.choice(
        [
            ("rain", "raining", "rained", "regnet", "regnen", "geregnet"),
            ("snow", "snowing", "snowed", "schneit", "schneien", "geschneit"),
        ]
    )
    if k == 3:
        return f"It is {verb[1]} in {c_en}.", f"In {c_de} {verb[3]} es."
    if k == 4:
        return f"It will {verb[0]} in {c_en} tomorrow.", f"Morgen wird es in {c_de} {verb[4]}."
    if k == 5:
        return f"It {verb[2]} in {c_en} yesterday.", f"Gestern hat es in {c_de} {verb[5]}."
    q_en, q_de = rng.choice(
        [("good", "gut"), ("bad", "schlecht"), ("nice", "schön"), ("terrible", "furchtbar")]
    )
    return f"The weather in {c_en} is {q_en} today.", f"Das Wetter in {c_de} ist heute {q_de}."


# destinations: English, German direction phrase, far away (plane only)?
DESTS = [(c_en, f"nach {c_de}", c_en in ("Tokyo", "New York")) for c_en, c_de in CITIES] + [
    ("Italy", "nach Italien", False),
    ("Spain", "nach Spanien", False),
    ("France", "nach Frankreich", False),
    ("Austria", "nach Österreich", False),
    ("Switzerland", "in die Schweiz", False),
    ("Turkey", "in die Türkei", False),
    ("the Netherlands", "in die Niederlande", False),
    ("the USA", "in die USA", True),
    ("Japan", "nach Japan", True),
    ("Denmark", "nach Dänemark", False),
    ("Greece", "nach Griechenland", False),
    ("Poland", "nach Polen", False),
]
NEAR = [
    ("the mountains", "in die Berge"),
    ("the sea", "ans Meer"),
    ("the lake", "an den See"),
    ("the countryside", "aufs Land"),
]
FUTURE_TIMES = [
    ("tomorrow", "morgen"),
    ("next week", "nächste Woche"),
    ("on Friday", "am Freitag"),
    ("in the summer", "im Sommer"),
    ("next month", "nächsten Monat"),
    ("on the weekend", "am Wochenende"),
    ("in August", "im August"),
]
PAST_TRIPS = [
    ("last year", "letztes Jahr"),
    ("last summer", "letzten Sommer"),
    ("in May", "im Mai"),
    ("two weeks ago", "vor zwei Wochen"),
    ("at Easter", "an Ostern"),
    ("last winter", "letzten Winter"),
]
MODES = [
    ("by train", "mit dem Zug"),
    ("by bus", "mit dem Bus"),
    ("by car", "mit dem Auto"),
    ("by plane", ""),
]


def t_travel(rng: random.Random) -> Pair:
    s = person(rng)
    if rng.random() < 0.3:
        s = rng.choice([PEOPLE[3], PEOPLE[0]])  # more "we" and "I"
    if rng.random() < 0.2:
        d_en, d_de = rng.choice(NEAR)
        modes = MODES[:3]
    else:
        d_en, d_de, far = rng.choice(DESTS)
        modes = MODES[3:] if far else MODES
    mode = rng.choice(modes)
    k = rng.randrange(3)
    if k == 0:
        en, de = trip_future(rng, s, (d_en, d_de), mode)
    elif k == 1:
        en, de = trip_past(rng, s, (d_en, d_de), mode)
    else:
        en = f"{s.en} {en_pres('want', 'wants', s.p)} to travel to {d_en}"
        de = f"{s.de} {form(('will', 'will', 'wollen'), s.p)} {d_de} reisen"
    return cap(en) + ".", cap(de) + "."


def trip_future(rng: random.Random, s: Subj, dest: Pair, mode: Pair) -> Pair:
    """A planned trip, without the final full stop."""
    (d_en, d_de), (m_en, m_de) = dest, mode
    t_en, t_de = rng.choice(FUTURE_TIMES)
    if m_en == "by plane":
        en = f"{s.en} {BE_EN[s.p]} flying to {d_en} {t_en}"
        verb, mid = form(("fliege", "fliegt", "fliegen"), s.p), ""
    else:
        en = f"{s.en} {BE_EN[s.p]} going to {d_en} {m_en} {t_en}"
        verb, mid = form(("fahre", "fährt", "fahren"), s.p), f" {m_de}"
    if rng.random() < 0.5:
        return en, f"{s.de} {verb} {t_de}{mid} {d_de}"
    return en, f"{t_de} {verb} {s.de}{mid} {d_de}"


def trip_past(rng: random.Random, s: Subj, dest: Pair, mode: Pair) -> Pair:
    """A past trip (German perfect with "sein"), without the final full stop."""
    (d_en, d_de), (m_en, m_de) = dest, mode
    t_en, t_de = rng.choice(PAST_TRIPS)
    aux = form(SEIN, s.p)
    if m_en == "by plane":
        en = f"{s.en} flew to {d_en} {t_en}"
        part, mid = "geflogen", ""
    else:
        en = f"{s.en} went to {d_en} {m_en} {t_en}"
        part, mid = "gefahren", f" {m_de}"
    if rng.random() < 0.5:
        return en, f"{s.de} {aux} {t_de}{mid} {d_de} {part}"
    return en, f"{t_de} {aux} {s.de}{mid} {d_de} {part}"


EVENTS = [
    Noun("meeting", "Meeting", "n"),
    Noun("film", "Film", "m"),
    Noun("concert", "Konzert", "n"),
    Noun("lesson", "Unterricht", "m"),
    Noun("course", "Kurs", "m"),
    Noun("game", "Spiel", "n"),
    Noun("party", "Party", "f"),
    Noun("lecture", "Vorlesung", "f"),
    Noun("workshop", "Workshop", "m"),
    Noun("exam", "Prüfung", "f"),
    Noun("conference", "Konferenz", "f"),
    Noun("play", "Theaterstück", "n"),
    Noun("tour", "Führung", "f"),
    Noun("training course", "Schulung", "f"),
]
VEHICLES = [
    Noun("train", "Zug", "m"),
    Noun("bus", "Bus", "m"),
    Noun("ferry", "Fähre", "f"),
    Noun("plane", "Flugzeug", "n"),
]
HOURS_EN = [
    "twelve",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
HOURS_DE = [
    "zwölf",
    "eins",
    "zwei",
    "drei",
    "vier",
    "fünf",
    "sechs",
    "sieben",
    "acht",
    "neun",
    "zehn",
    "elf",
    "zwölf",
]
DAYS = [
    ("Monday", "Montag"),
    ("Tuesday", "Dienstag"),
    ("Wednesday", "Mittwoch"),
    ("Thursday", "Donnerstag"),
    ("Friday", "Freitag"),
    ("Saturday", "Samstag"),
    ("Sunday", "Sonntag"),
]


def clock(rng: random.Random) -> Pair:
    h = rng.randint(1, 12)
    nxt = h % 12 + 1
    k = rng.randrange(5)
    if k == 0:
        return f"at {HOURS_EN[h]} o'clock", "um " + ("ein" if h == 1 else HOURS_DE[h]) + " Uhr"
    if k == 1:
        return f"at half past {HOURS_EN[h]}", f"um halb {HOURS_DE[nxt]}"
    if k == 2:
        return f"at a quarter past {HOURS_EN[h]}", f"um Viertel nach {HOURS_DE[h]}"
    if k == 3:
        return f"at a quarter to {HOURS_EN[nxt]}", f"um Viertel vor {HOURS_DE[nxt]}"
    h24 = rng.randint(8, 21)
    mm = rng.choice(["05", "10", "15", "20", "30", "40", "45", "50"])
    h12 = h24 - 12 if h24 > 12 else h24
    ampm = "p.m." if h24 >= 12 else "a.m."
    return f"at {h12}:{mm} {ampm}", f"um {h24}:{mm} Uhr"


def t_event(rng: random.Random) -> Pair:
    t_en, t_de = clock(rng)
    noun, det, verb = vehicle_event(rng) if rng.random() < 0.3 else scheduled_event(rng)
    v_en, v_en3, de_v, de_part = verb
    np_en, np_de = event_np(noun, det)
    tail = f" {de_part}" if de_part else ""
    k = rng.randrange(4)
    if k == 0:
        return cap(f"{np_en} {v_en3} {t_en}."), cap(f"{np_de} {de_v} {t_de}{tail}.")
    if k == 1:
        d_en, d_de = rng.choice(DAYS + [("tomorrow", "")])
        if d_de:
            return cap(f"{np_en} {v_en3} {t_en} on {d_en}."), cap(
                f"{np_de} {de_v} am {d_de} {t_de}{tail}."
            )
        return cap(f"{np_en} {v_en3} {t_en} tomorrow."), cap(f"{np_de} {de_v} morgen {t_de}{tail}.")
    if k == 2:
        return f"When does {np_en} {v_en}?", f"Wann {de_v} {np_de}{tail}?"
    return f"What time does {np_en} {v_en}?", f"Um wie viel Uhr {de_v} {np_de}{tail}?"


# event verbs: English (base, 3sg), German 3sg, German separable prefix
EventVerb = tuple[str, str, str, str]


def vehicle_event(rng: random.Random) -> tuple[Noun, str, EventVerb]:
    """A vehicle, its determiner and a verb for leaving or arriving."""
    noun = rng.choice(VEHICLES)
    det = rng.choice(["def", "our", "next"])
    if noun.en == "plane":
        verbs = [("take off", "takes off", "startet", ""), ("land", "lands", "landet", "")]
    else:
        verbs = [("leave", "leaves", "fährt", "ab"), ("arrive", "arrives", "kommt", "an")]
    return noun, det, rng.choice(verbs)


def scheduled_event(rng: random.Random) -> tuple[Noun, str, EventVerb]:
    """An event, its determiner and a verb for starting or ending."""
    noun = rng.choice(EVENTS)
    if noun.en in ("film", "game", "concert", "play", "tour"):
        det = rng.choice(["def", "def", "next"])
    else:
        det = rng.choice(["def", "def", "our", "my", "next"])
    verb = rng.choice([("start", "starts", "beginnt", ""), ("end", "ends", "endet", "")])
    return noun, det, verb


def event_np(noun: Noun, det: str) -> Pair:
    """English and German nominative noun phrase; det "next" means "the next"."""
    if det == "next":
        adj = Adj("next", "nächst")
        return en_np(noun, "def", adj), de_np(noun, "nom", "def", adj)
    return en_np(noun, det), de_np(noun, "nom", det)


# weekly activities: English (base, 3sg), German verb forms, rest
ACTIVITIES = [
    (("go swimming", "goes swimming"), ("gehe", "geht", "gehen"), "schwimmen"),
    (("play soccer", "plays soccer"), ("spiele", "spielt", "spielen"), "Fußball"),
    (("go to the gym", "goes to the gym"), ("gehe", "geht", "gehen"), "ins Fitnessstudio"),
    (("work from home", "works from home"), ("arbeite", "arbeitet", "arbeiten"), "von zu Hause"),
    (("learn German", "learns German"), ("lerne", "lernt", "lernen"), "Deutsch"),
    (("go shopping", "goes shopping"), ("gehe", "geht", "gehen"), "einkaufen"),
    (
        ("cook for the whole family", "cooks for the whole family"),
        ("koche", "kocht", "kochen"),
        "für die ganze Familie",
    ),
    (("have a piano lesson", "has a piano lesson"), ("habe", "hat", "haben"), "Klavierunterricht"),
    (("go to the market", "goes to the market"), ("gehe", "geht", "gehen"), "auf den Markt"),
    (("clean the apartment", "cleans the apartment"), ("putze", "putzt", "putzen"), "die Wohnung"),
    (("go to the movies", "goes to the movies"), ("gehe", "geht", "gehen"), "ins Kino"),
    (("do yoga", "does yoga"), ("mache", "macht", "machen"), "Yoga"),
    (("sleep late", "sleeps late"), ("schlafe", "schläft", "schlafen"), "lange"),
    (("work late", "works late"), ("arbeite", "arbeitet", "arbeiten"), "lange"),
    (("go to the office", "goes to the office"), ("gehe", "geht", "gehen"), "ins Büro"),
    (
        ("take the train to work", "takes the train to work"),
        ("fahre", "fährt", "fahren"),
        "mit dem Zug zur Arbeit",
    ),
    (("go to the library", "goes to the library"), ("gehe", "geht", "gehen"), "in die Bibliothek"),
    (("bake bread", "bakes bread"), ("backe", "backt", "backen"), "Brot"),
    (("go running", "goes running"), ("gehe", "geht", "gehen"), "joggen"),
    (
        ("write code for fun", "writes code for fun"),
        ("schreibe", "schreibt", "schreiben"),
        "zum Spaß Code",
    ),
]


def t_days(rng: random.Random) -> Pair:
    s = rng.choice([x for x in PEOPLE if x.en not in ("the children", "the students")])
    if rng.random() < 0.35:
        s = rng.choice([PEOPLE[0], PEOPLE[3]])
    (b, t), forms, rest = rng.choice(ACTIVITIES)
    d_en, d_de = rng.choice(DAYS)
    v_en = en_pres(b, t, s.p)
    verb = form(forms, s.p)
    k = rng.randrange(4)
    if k == 0:
        return f"On {d_en} {s.en} {v_en}.", f"Am {d_de} {verb} {s.de} {rest}."
    if k == 1:
        adv = d_de.lower() + "s"
        # "Ich gehe montags schwimmen": the adverb goes before the rest
        return cap(f"{s.en} {v_en} on {d_en}s."), cap(f"{s.de} {verb} {adv} {rest}.")
    if k == 2:
        return f"Every {d_en} {s.en} {v_en}.", f"Jeden {d_de} {verb} {s.de} {rest}."
    return f"On the weekend {s.en} {v_en}.", f"Am Wochenende {verb} {s.de} {rest}."


# priced items: noun, (min, max) euros, cents allowed?
PRICED = [
    (Noun("jacket", "Jacke", "f"), (40, 250), False),
    (Noun("shoes", "Schuhe", "pl", en_pl=True), (30, 180), False),
    (Noun("coffee", "Kaffee", "m"), (2, 5), True),
    (Noun("ticket", "Ticket", "n"), (3, 120), True),
    (Noun("book", "Buch", "n"), (8, 40), True),
    (Noun("laptop", "Laptop", "m"), (400, 2500), False),
    (Noun("phone", "Handy", "n"), (150, 1200), False),
    (Noun("bike", "Fahrrad", "n"), (200, 1500), False),
    (Noun("bread", "Brot", "n"), (2, 6), True),
    (Noun("umbrella", "Regenschirm", "m"), (8, 30), True),
    (Noun("headphones", "Kopfhörer", "pl", en_pl=True), (20, 300), False),
    (Noun("bag", "Tasche", "f"), (15, 120), False),
    (Noun("watch", "Uhr", "f"), (30, 500), False),
    (Noun("sweater", "Pullover", "m"), (25, 120), False),
    (Noun("dress", "Kleid", "n"), (30, 200), False),
    (Noun("lamp", "Lampe", "f"), (15, 150), False),
    (Noun("chair", "Stuhl", "m"), (20, 300), False),
    (Noun("sofa", "Sofa", "n"), (300, 2000), False),
    (Noun("keyboard", "Tastatur", "f"), (20, 150), False),
    (Noun("printer", "Drucker", "m"), (60, 400), False),
]


def price(rng: random.Random, lo: int, hi: int, cents: bool) -> Pair:
    euros = rng.randint(lo, hi)
    if euros > 100:
        euros = euros // 50 * 50 - 1 if rng.random() < 0.3 else euros // 10 * 10
    if cents and rng.random() < 0.6:
        c = rng.choice(["20", "50", "80", "90", "99"])
        return f"{euros}.{c} euros", f"{euros},{c} Euro"
    return f"{euros} euros", f"{euros} Euro"


def t_price(rng: random.Random) -> Pair:
    noun, (lo, hi), cents = rng.choice(PRICED)
    p_en, p_de = price(rng, lo, hi, cents)
    pl = noun.g == "pl"
    cost_en = "cost" if noun.en_pl else "costs"
    cost_de = "kosten" if pl else "kostet"
    k = rng.randrange(4)
    if k == 0:
        return cap(f"{en_np(noun, 'def')} {cost_en} {p_en}."), cap(
            f"{de_np(noun, 'nom', 'def')} {cost_de} {p_de}."
        )
    if k == 1:
        aux = "do" if noun.en_pl else "does"
        return (
            f"How much {aux} {en_np(noun, 'def')} cost?",
            f"Wie viel {cost_de} {de_np(noun, 'nom', 'def')}?",
        )
    if k == 2:
        return (
            cap(f"{en_np(noun, 'this')} {cost_en} only {p_en}."),
            cap(f"{de_np(noun, 'nom', 'this')} {cost_de} nur {p_de}."),
        )
    det = rng.choice(["my", "def", "this"])
    return (
        f"I paid {p_en} for {en_np(noun, det)}.",
        f"Ich habe {p_de} für {de_np(noun, 'acc', det)} bezahlt.",
    )


# languages: English, German noun, German adjective stem
Lang = tuple[str, str, str]
LANGS: list[Lang] = [
    ("English", "Englisch", "englisch"),
    ("German", "Deutsch", "deutsch"),
    ("French", "Französisch", "französisch"),
    ("Spanish", "Spanisch", "spanisch"),
    ("Italian", "Italienisch", "italienisch"),
    ("Dutch", "Niederländisch", "niederländisch"),
    ("Polish", "Polnisch", "polnisch"),
    ("Russian", "Russisch", "russisch"),
    ("Turkish", "Türkisch", "türkisch"),
    ("Japanese", "Japanisch", "japanisch"),
    ("Chinese", "Chinesisch", "chinesisch"),
    ("Portuguese", "Portugiesisch", "portugiesisch"),
    ("Arabic", "Arabisch", "arabisch"),
    ("Greek", "Griechisch", "griechisch"),
    ("Swedish", "Schwedisch", "schwedisch"),
]
LANG_ADJ = [
    ("beautiful", "schön"),
    ("difficult", "schwierig"),
    ("interesting", "interessant"),
    ("logical", "logisch"),
    ("useful", "nützlich"),
    ("melodic", "melodisch"),
]
TRANSLATORS = [
    ("the model", "das Modell"),
    ("this app", "diese App"),
    ("our system", "unser System"),
    ("the translation model", "das Übersetzungsmodell"),
    ("the new model", "das neue Modell"),
    ("the program", "das Programm"),
    ("my phone", "mein Handy"),
]
DOCS = [
    Noun("letter", "Brief", "m"),
    Noun("email", "E-Mail", "f"),
    Noun("article", "Artikel", "m"),
    Noun("book", "Buch", "n"),
    Noun("report", "Bericht", "m"),
    Noun("manual", "Handbuch", "n"),
    Noun("website", "Website", "f"),
    Noun("menu", "Speisekarte", "f"),
    Noun("contract", "Vertrag", "m"),
    Noun("text", "Text", "m"),
    Noun("documentation", "Dokumentation", "f"),
    Noun("subtitles", "Untertitel", "pl", en_pl=True),
]


# sentences about a person and languages (see FIELD_SENTENCES)
LANGUAGE_SENTENCES: list[PersonSentence] = [
    (("speak", "speaks"), "{l1} and {l2}", ("spreche", "spricht", "sprechen"), "{l1} und {l2}"),
    ("be", "learning {l2}", ("lerne", "lernt", "lernen"), "{l2}"),
    (("want", "wants"), "to learn {l2}", ("möchte", "möchte", "möchten"), "{l2} lernen"),
    (("speak", "speaks"), "{l1} very well", ("spreche", "spricht", "sprechen"), "sehr gut {l1}"),
]


def t_language(rng: random.Random) -> Pair:
    l1, l2 = rng.sample(LANGS, 2)
    if rng.random() < 0.35:
        l1, l2 = LANGS[0], LANGS[1]  # English -> German is the common case here
    s = person(rng, i_weight=0.25)
    k = rng.randrange(11)
    if k < 4:
        return language_skill(s, k, l1, l2)
    if k == 7:
        return translate_document(rng, s, l1, l2)
    if k == 9:
        det = rng.choice(["my", "his", "her", "our"])
        n = Noun("native language", "Muttersprache", "f")
        return cap(f"{en_np(n, det)} is {l1[0]}."), cap(f"{de_np(n, 'nom', det)} ist {l1[1]}.")
    if k in (8, 10):
        return translation_remark(rng, k, l1, l2)
    return language_remark(rng, k, l1, l2)


def language_skill(s: Subj, k: int, l1: Lang, l2: Lang) -> Pair:
    """Sentence `k` (0 to 3): a person speaks or learns a language."""
    return person_sentence(s, LANGUAGE_SENTENCES[k], {"l1": l1[0], "l2": l2[0]},
                           {"l1": l1[1], "l2": l2[1]})


def language_remark(rng: random.Random, k: int, l1: Lang, l2: Lang) -> Pair:
    """Sentence `k` (4 to 6): a remark about a language or a translator."""
    if k == 4:
        a_en, a_de = rng.choice(LANG_ADJ)
        return f"{l2[0]} is {a_or_an(a_en)} {a_en} language.", f"{l2[1]} ist eine {a_de}e Sprache."
    if k == 5:
        return f"Is {l2[0]} difficult to learn?", f"Ist {l2[1]} schwer zu lernen?"
    t_en, t_de = rng.choice(TRANSLATORS)
    return cap(f"{t_en} translates from {l1[0]} into {l2[0]}."), cap(
        f"{t_de} übersetzt aus dem {cap(l1[2])}en ins {cap(l2[2])}e."
    )


def translate_document(rng: random.Random, s: Subj, l1: Lang, l2: Lang) -> Pair:
    doc = rng.choice(DOCS)
    det = rng.choice(["def", "this", "my", "her", "his"])
    return cap(
        f"{s.en} {en_pres('translate', 'translates', s.p)} {en_np(doc, det)} "
        f"from {l1[0]} into {l2[0]}."
    ), cap(
        f"{s.de} {form(('übersetze', 'übersetzt', 'übersetzen'), s.p)} {de_np(doc, 'acc', det)} "
        f"aus dem {cap(l1[2])}en ins {cap(l2[2])}e."
    )


def translation_remark(rng: random.Random, k: int, l1: Lang, l2: Lang) -> Pair:
    """Sentence `k` (8 or 10): a remark about a translation."""
    if k == 8:
        if rng.random() < 0.5:
            return (
                f"We need a good translation into {l2[0]}.",
                f"Wir brauchen eine gute Übersetzung ins {cap(l2[2])}e.",
            )
        return (
            f"The translation into {l2[0]} is not finished yet.",
            f"Die Übersetzung ins {cap(l2[2])}e ist noch nicht fertig.",
        )
    a_en, a_de = rng.choice(
        [
            ("good", "gut"),
            ("correct", "korrekt"),
            ("not bad", "nicht schlecht"),
            ("too literal", "zu wörtlich"),
            ("surprisingly good", "überraschend gut"),
        ]
    )
    return (
        f"The translation from {l1[0]} into {l2[0]} is {a_en}.",
        f"Die Übersetzung aus dem {cap(l1[2])}en ins {cap(l2[2])}e ist {a_de}.",
    )


TEMPLATES = [
    (t_svo_present, 250),
    (t_svo_perfect, 150),
    (t_modal, 150),
    (t_negation, 90),
    (t_question, 100),
    (t_subordinate, 130),
    (t_because, 70),
    (t_love, 150),
    (t_hobby, 100),
    (t_field, 130),
    (t_pred, 130),
    (t_comparative, 60),
    (t_where, 100),
    (t_family, 110),
    (t_weather, 70),
    (t_travel, 90),
    (t_event, 70),
    (t_days, 80),
    (t_price, 60),
    (t_language, 120),
]


# ---------------------------------------------------------------------------
# Build and write
# ---------------------------------------------------------------------------


def read_pairs(path: Path) -> list[Pair]:
    """The hand-written pairs of a two-column TSV file with an ``en<TAB>de`` header."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != "en\tde":
        raise SystemExit(f"{path}: the first line must be the header 'en<TAB>de'")
    pairs = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 2 or not all(f.strip() for f in fields):
            raise SystemExit(f"{path}:{number}: expected two non-empty tab-separated fields")
        pairs.append((fields[0].strip(), fields[1].strip()))
    return pairs


def clean(s: str) -> str:
    return " ".join(s.split())


class Corpus:
    """Sentence pairs in the order they were added; no English or German sentence twice."""

    def __init__(self) -> None:
        self.pairs: list[Pair] = []
        self.seen_en: set[str] = set()
        self.seen_de: set[str] = set()

    def add(self, en: str, de: str) -> bool:
        """Add a pair unless either side is already there (ignoring case)."""
        en, de = clean(en), clean(de)
        if en.casefold() in self.seen_en or de.casefold() in self.seen_de:
            return False
        self.seen_en.add(en.casefold())
        self.seen_de.add(de.casefold())
        self.pairs.append((en, de))
        return True


def add_generated(corpus: Corpus, rng: random.Random, template: Template, wanted: int) -> None:
    """Add `wanted` new pairs from one template, giving up after 100 tries per pair."""
    got = tries = 0
    while got < wanted and tries < wanted * 100:
        tries += 1
        if corpus.add(*template(rng)):
            got += 1
    if got < wanted:
        print(f"note: {template.__name__} gave {got} of {wanted} pairs")


def build(hand: list[Pair]) -> list[Pair]:
    """The hand-written pairs, then every template's pairs, shuffled with the fixed seed."""
    rng = random.Random(SEED)
    corpus = Corpus()
    for en, de in hand:
        if not corpus.add(en, de):
            raise SystemExit(f"duplicate hand-written pair: {en}")
    for template, wanted in TEMPLATES:
        add_generated(corpus, rng, template, wanted)
    rng.shuffle(corpus.pairs)
    return corpus.pairs


def split(pairs: list[Pair]) -> dict[str, list[Pair]]:
    return {
        "test": pairs[:N_TEST],
        "val": pairs[N_TEST : N_TEST + N_VAL],
        "train": pairs[N_TEST + N_VAL :],
    }


def write(out: Path, name: str, pairs: list[Pair]) -> None:
    """Write NAME.en and NAME.de: one sentence a line, UTF-8, LF line endings."""
    for lang, idx in (("en", 0), ("de", 1)):
        lines = [p[idx] for p in pairs]
        for line in lines:
            if not line or "\t" in line or "\n" in line:
                raise SystemExit(f"bad line: {line!r}")
        (out / f"{name}.{lang}").write_text(
            "\n".join(lines) + "\n", encoding="utf-8", newline="\n"
        )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                        help="folder for the six files (default: nmt_cli/sample/)")
    parser.add_argument("--pairs", type=Path, default=PAIRS_TSV, metavar="TSV",
                        help="hand-written pairs (default: sample_pairs.tsv beside this script)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, part in split(build(read_pairs(args.pairs))).items():
        write(args.out, name, part)
        print(f"{name}: {len(part)} pairs")


if __name__ == "__main__":
    main(sys.argv[1:])
