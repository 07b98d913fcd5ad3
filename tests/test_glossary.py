"""Glossaries and constrained beam search: every hypothesis holds each of its sentence's
constraints whole, as one run, scored as teacher forcing scores it; the banks deal the beam
in turn; a glossary file finds its source terms as whole words; and `nmt translate
--glossary` as a user runs it, bad input included."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from test_cli import invoke, one_line_error
from test_nbest import train_tiny_run
from test_prefix import teacher_forced_log_probs
from test_search import TABLE, A, B, TableModel

from nmt_cli.config import DecodeConfig, check_engine
from nmt_cli.constrained import (
    INFLECTED,
    TERM_ENDED,
    Candidate,
    Pieces,
    Progress,
    allocate,
    constrained_beam_search,
    inflects,
    sentence_breaks,
    translate_constrained,
)
from nmt_cli.errors import UserError
from nmt_cli.glossary import Glossary, read_glossary
from nmt_cli.search import translate_nbest
from nmt_cli.service import ApiError, ServeConfig, parse_query
from nmt_cli.special_tokens import EOS_ID
from nmt_cli.translate import Translator

from conftest import random_tokens, same_up_to_rounding, tiny_model

CPU = torch.device("cpu")


def holds(tokens: list[int], run: list[int]) -> bool:
    return any(tokens[i : i + len(run)] == run for i in range(len(tokens) - len(run) + 1))


def test_progress_places_a_constraint_whole_and_undoes_one_broken_off():
    constraints = [[7, 8, 9], [5]]
    p = Progress((False, False))
    assert p.next_tokens(constraints) == {7, 5} and p.placed(constraints) == 0
    p = p.after(7, constraints).after(8, constraints)
    assert (p.current, p.placed_of_current, p.placed(constraints)) == (0, 2, 2)
    assert p.next_tokens(constraints) == {9}
    broken = p.after(5, constraints)  # 7 8 then 5: the first is undone, the second met
    assert broken.met == (False, True) and broken.placed(constraints) == 1 and broken.closing
    again = p.after(7, constraints)  # 7 8 7: the run starts over
    assert (again.current, again.placed_of_current) == (0, 1)
    done = p.after(9, constraints)
    assert done.met == (True, False) and done.closing and not done.complete
    assert not done.after(4, constraints).closing
    assert done.after(5, constraints).complete


def test_progress_follows_constraints_that_open_alike():
    """Two constraints opening with the same token: the search may go on with either, and a
    token that breaks one off may carry on another begun with the tokens before it ("den"
    "Hund" for "den Hund", though "den" was taken for "den Schnee")."""
    den, schnee, hund = 5, 7, 9
    constraints = [[den, schnee], [den, hund]]
    p = Progress((False, False)).after(den, constraints)
    assert p.next_tokens(constraints) == {schnee, hund}
    assert p.after(hund, constraints).met == (False, True)
    assert p.after(schnee, constraints).met == (True, False)
    overlapping = [[5, 6, 7], [6, 8]]  # 5 6 8: the first broken off after 5 6, the second met
    p = Progress((False, False)).after(5, overlapping).after(6, overlapping)
    assert p.after(8, overlapping).met == (False, True)
    assert p.after(4, overlapping).placed(overlapping) == 0


# Pieces of a vocabulary in which "▁Hund" takes endings: "▁Hunde" is it with one joined; "e"
# and "en" are endings, "führer" goes on with a word but is none, "E" and "▁läuft" neither.
HUND, HUNDE, E, FUEHRER, EN, LAEUFT, EIN = range(4, 11)
INFLECTING = ["<pad>", "<unk>", "<s>", "</s>", "▁Hund", "▁Hunde", "e", "führer", "en",
              "▁läuft", "▁Ein", "E", "5", "abcd", "▁"]


def test_pieces_know_the_endings_and_the_pieces_that_end_in_one():
    pieces = Pieces.of(INFLECTING, CPU)
    assert pieces.endings == {E, EN} and pieces.is_ending.nonzero().flatten().tolist() == [E, EN]
    assert pieces.longer == {HUND: {HUNDE}, E: {EN}}  # a term ending in "e" may end in "en"
    assert pieces.ends_like(HUNDE, HUND) and not pieces.ends_like(HUND, HUNDE)


def test_progress_of_an_inflected_term():
    """Inflecting, a term's last piece may be one with an ending joined (the word then ends),
    or the term may take an ending as a piece of its own (once); the first pieces of a term
    of several stay as given."""
    start, inflect = Progress((False,)), Pieces.of(INFLECTING, CPU)
    assert start.next_tokens([[HUND]]) == {HUND}
    assert start.next_tokens([[HUND]], inflect) == {HUND, HUNDE}
    assert start.next_tokens([[HUND, HUND]], inflect) == {HUND}
    assert start.after(HUNDE, [[HUND]]).met == (False,)  # not without inflecting
    joined = start.after(HUNDE, [[HUND]], inflect)
    assert joined.complete and joined.closing == INFLECTED
    placed = start.after(HUND, [[HUND]], inflect)
    assert placed.complete and placed.closing == TERM_ENDED
    assert placed.after(E, [[HUND]], inflect).closing == INFLECTED
    assert placed.after(E, [[HUND]]).closing == 0
    assert placed.after(E, [[HUND]], inflect).after(EN, [[HUND]], inflect).closing == 0
    two = start.after(HUND, [[HUND, HUND]], inflect)
    assert two.after(HUNDE, [[HUND, HUND]], inflect).complete


# After "▁Ein" the model would write "▁Hunde" (0.6), "▁läuft" (0.3), rarely "▁Hund" (0.1),
# which it would go on as "▁Hundführer" (0.5) or "▁Hunde" (0.3).
INFLECTING_TABLE = {2: {EIN: 1.0}, EIN: {HUNDE: 0.6, HUND: 0.1, LAEUFT: 0.3},
                    HUND: {FUEHRER: 0.5, E: 0.3, LAEUFT: 0.2}, HUNDE: {EN: 0.5, LAEUFT: 0.5},
                    E: {EN: 0.9, LAEUFT: 0.1}, FUEHRER: {LAEUFT: 1.0}, EN: {LAEUFT: 1.0},
                    LAEUFT: {EOS_ID: 1.0}}


def test_an_inflected_term_takes_the_ending_the_model_would_write():
    """The term "▁Hund": as given, the word ends after it ("▁Ein ▁Hund ▁läuft"); inflected,
    the model writes "▁Hunde" as it would, or "▁Hund" "e". No hypothesis takes more than one
    ending ("▁Hunde" "en", "▁Hund" "e" "en"), nor goes on with a piece that is none
    ("führer")."""
    model, pieces = TableModel(INFLECTING_TABLE, len(INFLECTING)), Pieces.of(INFLECTING, CPU)
    given, inflected = (constrained_beam_search(model, torch.tensor([[EIN]]), [5], [[[HUND]]],
                                                beam_size=3, alpha=0.0, pieces=pieces,
                                                inflect=inflect)[0] for inflect in (False, True))
    # the beam's other places go to hypotheses the model gives no probability
    likely = [[h.tokens for h in found if h.log_prob > -1e6] for found in (given, inflected)]
    assert likely[0] == [[EIN, HUND, LAEUFT]]
    assert likely[1] == [[EIN, HUNDE, LAEUFT], [EIN, HUND, E, LAEUFT]]
    with pytest.raises(ValueError, match="target pieces"):
        constrained_beam_search(model, torch.tensor([[EIN]]), [5], [[[HUND]]], beam_size=3,
                                alpha=0.0, inflect=True)


# A vocabulary with a full stop: "▁Brot" "." is what the model would write; "▁usw" "." too.
BROT, USW, DOT, UND = range(4, 8)
STOPS = ["<pad>", "<unk>", "<s>", "</s>", "▁Brot", "▁usw", ".", "▁und"]


def test_a_term_may_hold_a_full_stop_and_come_twice():
    """A hypothesis with a term unmet writes no sentence end, but a full stop that is a piece
    of the term ("usw.") is no sentence end; and --no-repeat-ngram does not keep a term
    found twice from its second place."""
    model, pieces = TableModel({2: {BROT: 1.0}, BROT: {DOT: 0.7, USW: 0.3},
                                USW: {DOT: 0.9, EOS_ID: 0.1}, DOT: {EOS_ID: 1.0}},
                               len(STOPS)), Pieces.of(STOPS, CPU)
    found = constrained_beam_search(model, torch.tensor([[BROT]]), [6], [[[USW, DOT]]],
                                    beam_size=3, alpha=0.0, pieces=pieces)[0]
    assert found[0].tokens == [BROT, USW, DOT]
    model = TableModel({2: {BROT: 1.0}, BROT: {UND: 0.5, EOS_ID: 0.5},
                        UND: {BROT: 0.5, USW: 0.5}, USW: {EOS_ID: 1.0}}, len(STOPS))
    found = constrained_beam_search(model, torch.tensor([[BROT]]), [6], [[[BROT], [BROT]]],
                                    beam_size=3, alpha=0.0, no_repeat_ngram=1, pieces=pieces)
    assert found[0][0].tokens == [BROT, UND, BROT]


def test_allocate_deals_the_banks_in_turn_fullest_first():
    def c(log_prob, bank):
        return Candidate(0, 4, log_prob, Progress((False,)), bank, False)

    found = [c(-1.0, 0), c(-2.0, 0), c(-3.0, 0), c(-5.0, 2), c(-4.0, 1), c(-6.0, 2)]
    chosen = allocate(found, 4)
    assert [(x.bank, x.log_prob) for x in chosen] == [(2, -5.0), (1, -4.0), (0, -1.0),
                                                      (2, -6.0)]
    assert allocate(found, 10) == sorted(allocate(found, 10), key=lambda x: 0)  # all six
    assert len(allocate(found, 10)) == 6


@pytest.mark.parametrize(("constraints", "best"), [
    ([], [B]), ([[A]], [A]), ([[A, B]], [A, B]), ([[B], [A]], [A, B]), ([[A, A]], [A, A])])
def test_constrained_search_finds_the_best_hypothesis_that_holds_them(constraints, best):
    """On a known distribution: B alone is best (0.4); holding A, A <eos> (0.24) beats A B
    (0.18); holding A B, or both A and B, only A B does; A A needs A A <eos> (0.036). The
    hypotheses that hold the constraints come first; the beam is filled with those stopped by
    the limit without them only when there are not enough."""
    found = constrained_beam_search(TableModel(TABLE), torch.tensor([[A, A]]), [4],
                                    [constraints], beam_size=3, alpha=0.0)[0]
    assert found[0].tokens == best and len(found) == 3
    held = [all(holds(h.tokens, run) for run in constraints) for h in found]
    assert held == sorted(held, reverse=True)


def test_the_output_limit_holds_the_constraints_and_room_around_them():
    """A sentence's limit, here 1 (a = 0, b = 1), is raised to hold its constraints and as
    many tokens again as its source has (here 1 + 1), room for a word beside the term B:
    A B (0.18) comes after B (0.4). A limit that holds that already is kept."""
    model = TableModel(TABLE)
    config = DecodeConfig(beam=3, max_len_a=0.0, max_len_b=1, alpha=0.0)
    found = translate_constrained(model, [[A]], [[[B]]], config, CPU, nbest=3)[0]
    assert [h.tokens for h in found][:2] == [[B], [A, B]]
    assert max(len(h.tokens) for h in found) == 2
    config = DecodeConfig(beam=3, max_len_a=0.0, max_len_b=3, alpha=0.0)
    found = translate_constrained(model, [[A]], [[[B]]], config, CPU, nbest=3)[0]
    assert max(len(h.tokens) for h in found) == 3  # A A B


def test_a_constraint_that_does_not_fit_the_limit_still_gives_hypotheses():
    found = constrained_beam_search(TableModel(TABLE), torch.tensor([[A]]), [2], [[[A, A, A]]],
                                    beam_size=2, alpha=0.0)[0]
    assert found and all(len(h.tokens) <= 2 for h in found)


@pytest.mark.parametrize("arch", ["transformer", "gru"])
def test_every_hypothesis_holds_its_constraints_scored_as_teacher_forcing(arch):
    """On an untrained model: each of the n-best holds each constraint as one run, and its
    log-probability is the teacher-forced one; a word a constraint ends is not continued, and
    no sentence ends (pieces 28 and 34, which these models write often) before the constraints
    are met, past the source's own sentence breaks; sentences without constraints decode as
    plain beam search, in their places."""
    model = tiny_model(arch)
    config = DecodeConfig(beam=4, alpha=1.0, max_len_a=0.0, max_len_b=25)
    src_ids = [random_tokens(1, n, seed=n)[0].tolist() for n in (6, 4, 9, 5)]
    constraints = [[[11, 12, 13]], [], [[30], [20, 21]], [[9, 9]]]
    breaks = [0, 0, 1, 0]
    names = ["<pad>", "<unk>", "<s>", "</s>"] + ["▁w"] * 36 + ["x"] * 10
    names[28], names[34] = ".", "▁!"
    pieces = Pieces.of(names, CPU)
    found = translate_constrained(model, src_ids, constraints, config, CPU, nbest=4,
                                  pieces=pieces, breaks=breaks)
    assert same_up_to_rounding(found[1], translate_nbest(model, src_ids[1:2], config, CPU, 4)[0])
    for src, own, hyps, allowed in zip(src_ids, constraints, found, breaks):
        assert len(hyps) == 4
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for h in hyps:
            assert all(holds(h.tokens, run) for run in own), (h.tokens, own)
            assert len(h.tokens) <= 25 and EOS_ID not in h.tokens
            scored = teacher_forced_log_probs(model, src, h.tokens)  # then <eos>'s
            if len(h.tokens) == 25:  # stopped by the limit: no <eos>
                scored.pop()
            assert math.isclose(h.log_prob, sum(scored), rel_tol=1e-4, abs_tol=1e-4)
            for run in own:  # the word it ends where it is first placed is not continued
                end = next(i + len(run) for i in range(len(h.tokens))
                           if h.tokens[i : i + len(run)] == run)
                assert end == len(h.tokens) or h.tokens[end] < 40
            stops = [i for i, token in enumerate(h.tokens) if token in (28, 34)]
            early = [i for i in stops if not all(holds(h.tokens[:i], run) for run in own)]
            assert len(early) <= allowed, (h.tokens, own)


@pytest.mark.parametrize("arch", ["transformer", "gru"])
def test_a_sentence_finds_the_same_hypotheses_alone_and_in_a_batch(arch):
    """Batches of constrained sentences (each with k rows, their own limits) find what each
    sentence finds alone."""
    model = tiny_model(arch)
    src_ids = [random_tokens(1, n, seed=n)[0].tolist() for n in (6, 4, 9, 5, 7)]
    constraints = [[[11, 12, 13]], [[5]], [[30], [20, 21]], [[9, 9]], [[14], [15], [16]]]
    together, alone = (translate_constrained(
        model, src_ids, constraints, DecodeConfig(beam=3, max_len_a=1.0, max_len_b=8,
                                                  batch_size=size), CPU, nbest=3)
        for size in (5, 1))
    for mine, theirs in zip(together, alone):
        assert [h.tokens for h in mine] == [h.tokens for h in theirs]
        assert all(math.isclose(a.score, b.score, abs_tol=1e-4) for a, b in zip(mine, theirs))


def test_pieces_and_sentence_breaks():
    pieces = Pieces.of(["<pad>", "<unk>", "<s>", "</s>", "▁Haus", "s", ".", "▁.", "!?", ",",
                        "5", "▁", "..."], CPU)
    assert pieces.continues_word.tolist() == [False] * 5 + [True] + [False] * 4 + [True] \
        + [False] * 2
    assert pieces.sentence_ends == {6, 7, 8, 12}
    assert pieces.ends_sentence.nonzero().flatten().tolist() == [6, 7, 8, 12]
    assert [sentence_breaks(line) for line in ("A man.", "Hello. How are you?", "Wait... what?!",
                                               "3.5 m. Yes! No")] == [0, 1, 1, 2]


def test_constraints_follow_a_target_prefix():
    model, config = tiny_model("transformer"), DecodeConfig(beam=3, max_len_a=0.0, max_len_b=20)
    src = random_tokens(1, 6, seed=3)[0].tolist()
    found = translate_constrained(model, [src], [[[17, 18]]], config, CPU, 3,
                                  prefixes=[[7, 9]])
    assert all(h.tokens[:2] == [7, 9] and holds(h.tokens, [17, 18]) for h in found[0])


def test_constraints_need_beam_search():
    model = tiny_model("transformer")
    for config, message in ((DecodeConfig(beam=1), "--beam 2 or more"),
                            (DecodeConfig(sampling=True), "drop --sampling")):
        with pytest.raises(UserError, match=message):
            translate_constrained(model, [[5, 6]], [[[7]]], config, CPU)
    with pytest.raises(UserError, match="ctranslate2 engine cannot place terms"):
        check_engine("ctranslate2", DecodeConfig(glossary="terms.tsv"))


# Glossary files.

def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_glossary_finds_whole_words_longest_first_in_order(tmp_path):
    glossary = read_glossary(write(tmp_path / "g.tsv", "bike\tFahrrad\n\nblue bike\tblaues Rad\n"
                                   "C++\tC++\nman\tMann\n"))
    assert glossary.terms == {"bike": "Fahrrad", "blue bike": "blaues Rad", "C++": "C++",
                              "man": "Mann"}
    assert glossary.targets("A man on a blue bike and a bike.") == ["Mann", "blaues Rad",
                                                                    "Fahrrad"]
    assert glossary.targets("Bikes, a biker, a Man, a woman, manly") == []  # whole words, case
    assert glossary.targets("man-made C++ code (bike)") == ["Mann", "C++", "Fahrrad"]


def test_a_glossary_ignoring_case_follows_the_case_it_finds(tmp_path):
    glossary = read_glossary(write(tmp_path / "g.tsv", "bike\tfahrrad\nUS\tUSA\nus\tuns\n"
                                   "the player\tder Spieler\n"))
    line = "Bike lanes. A BIKE for us, the US and The Player; bikes."
    assert glossary.targets(line) == ["uns", "USA"]  # the same case only
    assert glossary.targets(line, ignore_case=True) == [
        "Fahrrad", "FAHRRAD", "uns", "USA", "Der Spieler"]
    assert glossary.targets("Us and THE PLAYER", ignore_case=True) == ["USA", "DER SPIELER"]
    # matched in any case by the pattern, though casefold() gives "i̇stanbul" and "ıstanbul"
    istanbul = read_glossary(write(tmp_path / "i.tsv", "istanbul\tIstanbul\n"))
    assert istanbul.targets("İstanbul or ıstanbul", ignore_case=True) == ["Istanbul"] * 2
    # a case the model cannot write ("É" unknown) falls back to the term as written
    cafe = read_glossary(write(tmp_path / "c.tsv", "cafe\tCafé\n"))
    assert cafe.targets("THE CAFE", ignore_case=True) == ["CAFÉ"]
    assert cafe.targets("THE CAFE", ignore_case=True, writable=lambda t: "É" not in t) == [
        "Café"]
    decode = DecodeConfig(glossary=str(tmp_path / "c.tsv"), glossary_ignore_case=True)
    assert parse_query(json.dumps({"text": "THE CAFE"}).encode(), ServeConfig(), decode,
                       writable=lambda t: "É" not in t).terms == [["Café"]]


LAYERED_LINES = ["New York City Hall", "A bike in New York.", "NEW YORK CITY HALL", "york",
                 "the bike helmet, a Bike, new bikes", "A man in the city hall of new york"]


@pytest.mark.parametrize("ignore_case", [False, True])
def test_a_glossary_over_another_finds_what_one_of_all_their_entries_finds(ignore_case):
    """A request's glossary over the server's (matched apart: the server's pattern is not
    rebuilt for each request) finds the terms and targets that one glossary of the server's
    entries with the request's added finds: leftmost first, the longest where they overlap,
    a term of the request's in place of the server's. Ignoring case, an entry of the
    request's also wins over one of the server's that differs from it in case alone."""
    server = Glossary({"New York": "N.Y.", "York": "Y.", "bike": "Fahrrad", "bike helmet": "Helm",
                       "city hall": "Rathaus", "man": "Mann"})
    own = {"bike": "Rad", "York City": "YC", "Hall": "Halle", "new": "neu", "Bike": "RAD"}
    layered, merged = Glossary(own, under=server), Glossary({**server.terms, **own})
    for line in LAYERED_LINES:
        assert layered.targets(line, ignore_case) == merged.targets(line, ignore_case), line
    assert layered.targets("A bike in New York City Hall.") == ["Rad", "N.Y.", "Halle"]
    assert "New York" not in layered.pattern.pattern  # its own terms only
    cased = Glossary({"City Hall": "RH"}, under=server)
    assert cased.targets("the CITY HALL", ignore_case) == (["RH"] if ignore_case else [])


@pytest.mark.parametrize(("text", "message"), [
    ("bike\tFahrrad\nman Mann\n", "g.tsv:2: expected a source term, a tab and a target term"),
    ("bike\t\n", "g.tsv:1: expected"), ("a\tb\tc\n", "g.tsv:1: expected"),
    ("bike\tFahrrad\nbike\tRad\n", "g.tsv:2: 'bike' is already given as 'Fahrrad'"),
    ("\n \n", "the glossary has no terms")])
def test_a_bad_glossary_is_a_one_line_error_naming_its_line(tmp_path, text, message):
    with pytest.raises(UserError, match=message):
        read_glossary(write(tmp_path / "g.tsv", text))


# The engine and the command line, on a run trained for three steps.

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("glossary"))


LINES = ["A man rides a horse.", "", "Two dogs play in the snow.", "A man and a dog."]


def test_translate_glossary(tiny_run, tmp_path):
    """Each line's translations hold the target term of each source term in it; a line with
    none translates as without the glossary."""
    glossary = write(tmp_path / "g.tsv", "man\tMann\ndog\tHund\n")
    source = tmp_path / "in.en"
    source.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    common = ["--run", str(tiny_run), "--beam", "3", "--max-len-b", "6"]
    result = invoke("translate", *common, "-i", str(source), "--glossary", glossary,
                    "--nbest", "2", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    plain = invoke("translate", *common, "-i", str(source), "--nbest", "2", "--format", "jsonl")
    lines, before = result.stdout.splitlines(), plain.stdout.splitlines()
    assert all(same_up_to_rounding(json.loads(lines[k]), json.loads(before[k])) for k in (1, 2))
    for line, terms in ((lines[0], ["Mann"]), (lines[3], ["Mann", "Hund"])):
        assert line.count('"text"') == 2 and line.count("Mann") >= 2, line
        assert all(line.count(term) >= 2 for term in terms), line
    translator = Translator.from_run(tiny_run, "cpu")
    config = DecodeConfig(beam=3, max_len_b=6, glossary=glossary)
    assert all("Mann" in h.text.split() or "Mann." in h.text
               for h in translator.translate_nbest(LINES[:1], config, 3)[0])
    any_case = DecodeConfig(beam=3, glossary=glossary, glossary_ignore_case=True)
    assert translator.line_terms(["A MAN."], any_case) == [["MANN"]]
    translator.writable = lambda text: text != "MANN"  # as if "MANN" could not be written
    assert translator.line_terms(["A MAN."], any_case) == [["Mann"]]
    shouted = invoke("translate", *common, "A MAN.", "--glossary", glossary,
                     "--glossary-ignore-case")
    assert shouted.exit_code == 0 and "MANN" in shouted.stdout, shouted.output
    inflected = invoke("translate", *common, "-i", str(source), "--glossary", glossary,
                       "--glossary-inflect", "--nbest", "2", "--format", "jsonl")
    assert inflected.exit_code == 0, inflected.output
    for line, terms in ((0, ["Mann"]), (3, ["Mann", "Hund"])):
        for h in json.loads(inflected.stdout.splitlines()[line])["hypotheses"]:
            found = [w.strip(".,") for w in h["text"].split()]
            assert all(any(inflects(w, term) for w in found) for term in terms), h["text"]
    pictured = invoke("attention", *common, LINES[3], "--glossary", glossary, "--json")
    assert pictured.exit_code == 0, pictured.output
    best = json.loads(lines[3])["hypotheses"][0]["text"]
    assert json.loads(pictured.stdout)["translation"] == best


def test_translate_glossary_errors(tiny_run, tmp_path):
    run = ["translate", "--run", str(tiny_run), "A man."]
    one_line_error(invoke(*run, "--glossary", str(tmp_path / "none.tsv")), "none.tsv",
                   "not found")
    bad = write(tmp_path / "bad.tsv", "man\tMann\nwoman\n")
    one_line_error(invoke(*run, "--glossary", bad), "bad.tsv:2:")
    good = write(tmp_path / "good.tsv", "man\tMann\n")
    one_line_error(invoke(*run, "--glossary", good, "--beam", "1"), "--beam 2 or more")
    one_line_error(invoke(*run, "--glossary", good, "--sampling"), "drop --sampling")
    greek = write(tmp_path / "greek.tsv", "man\tΩμέγα\n")
    one_line_error(invoke(*run, "--glossary", greek), "'Ωμέγα'", "vocabulary lacks")
    unseen = write(tmp_path / "unseen.tsv", "man\t\u200b\n")  # a zero-width space
    one_line_error(invoke(*run, "--glossary", unseen), "'\\u200b'", "nothing to write")
    most = Translator.from_run(tiny_run, "cpu").max_positions  # a term cut short is no term
    long = write(tmp_path / "long.tsv", "man\t" + "a. " * most + "\n")
    one_line_error(invoke(*run, "--glossary", long, "--beam", "2"), "a line's terms take",
                   f"more than the {most:,} a translation holds")


def test_translate_terms_file(tiny_run, tmp_path):
    """--terms-file: each line's own target terms (fairseq's per-line constraints), beside
    those of a glossary; a file of another length is a one-line error."""
    source, terms = tmp_path / "in.en", tmp_path / "terms.de"
    source.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    terms.write_text("Haus\tHund\n\nBaum\n\t \n", encoding="utf-8")
    common = ["--run", str(tiny_run), "--beam", "3", "--max-len-b", "6", "-i", str(source)]
    def texts(*options: str) -> list[list[str]]:
        result = invoke("translate", *common, "--nbest", "2", "--format", "jsonl", *options)
        assert result.exit_code == 0, result.output
        return [[h["text"] for h in json.loads(line)["hypotheses"]]
                for line in result.stdout.splitlines()]

    out, plain = texts("--terms-file", str(terms)), texts()
    assert out[1] == plain[1] and out[3] == plain[3]  # no terms: as without
    assert all("Haus" in text and "Hund" in text for text in out[0])
    assert all("Baum" in text for text in out[2])
    both = invoke("translate", *common, "--terms-file", str(terms), "--glossary",
                  write(tmp_path / "g.tsv", "dogs\tHunde\n"))
    assert both.exit_code == 0, both.output
    assert "Baum" in both.stdout.split("\n")[2] and "Hunde" in both.stdout.split("\n")[2]
    short = write(tmp_path / "short.de", "Haus\n")
    one_line_error(invoke("translate", *common, "--terms-file", short),
                   f"--terms-file {short} has 1 lines and the input 4; give a line of terms "
                   "per line")
    streamed = invoke("translate", "--run", str(tiny_run), "--beam", "3", "--terms-file", short,
                      input=b"A man.\nA dog.\n")
    one_line_error(streamed, f"--terms-file {short} has fewer lines than the input")
    lost = write(tmp_path / "lost.de", "Haus\nHund\nBaum\n\t \n")
    blank = invoke("translate", "--run", str(tiny_run), "--beam", "3", "--terms-file", lost,
                   input=b"A man.\n\nA dog.\n \n")  # line 2's terms are lost, line 4 has none
    assert blank.exit_code == 0 and blank.stdout.split("\n")[1::2] == ["", ""]
    assert blank.stderr == (f"warning: input line 2 is blank, and so is its translation: "
                            f"--terms-file {lost}:2 is left out\n")


def test_a_request_glossary_adds_to_the_servers_and_overrides_it(tmp_path):
    decode = DecodeConfig(glossary=write(tmp_path / "g.tsv", "man\tMann\ndog\tHund\n"))

    def query(request: dict, engine: str = "torch", config=decode):
        return parse_query(json.dumps(request).encode(), ServeConfig(engine=engine), config)

    asked = query({"text": ["A man and a dog.", "A cat."],
                   "glossary": {"dog": "Köter", " cat ": "Katze"}})
    assert asked.terms == [["Mann", "Köter"], ["Katze"]] and asked.config.glossary == ""
    assert query({"text": "A man."}).terms == [["Mann"]]
    assert query({"text": "A man."}, config=DecodeConfig()).terms is None
    # an empty "glossary" object matched the empty string: a KeyError, answered 500
    assert query({"text": "A man.", "glossary": {}}).terms == [["Mann"]]
    assert query({"text": "A man.", "glossary": {}}, config=DecodeConfig()).terms is None
    assert Glossary({}).targets("A man.") == []
    assert not query({"text": "A man."}).config.glossary_inflect  # the server's default
    assert query({"text": "A man.", "glossary_inflect": True}).config.glossary_inflect
    inflecting = DecodeConfig(glossary=decode.glossary, glossary_inflect=True)
    assert query({"text": "A man."}, config=inflecting).config.glossary_inflect
    assert not query({"text": "A man.", "glossary_inflect": False},
                     config=inflecting).config.glossary_inflect
    for request, status, message in (
            ({"glossary": {str(i): "x" for i in range(1001)}}, 413, "at most 1,000"),
            ({"glossary": {f"{i:04d}" + "-" * 1996: "x" for i in range(11)}}, 413,
             '"glossary" has 22,000 characters of source terms; at most 20,000'),
            ({"glossary": {"man": ""}}, 422, "must map source terms"),
            ({"glossary": {"man": "Mann"}, "beam": 1}, 422, "beam search"),
            ({"glossary_inflect": "yes"}, 422, '"glossary_inflect" must be true or false')):
        with pytest.raises(ApiError, match=message) as refused:
            query({"text": "A man.", **request})
        assert refused.value.status == status
    with pytest.raises(ApiError, match="ctranslate2 engine cannot place terms"):
        query({"text": "A man.", "glossary": {"man": "Mann"}}, "ctranslate2", DecodeConfig())
    sampling = DecodeConfig(sampling=True, beam=1)
    with pytest.raises(ApiError, match=r"this server samples its translations \(--sampling\)"):
        query({"text": "A man.", "glossary": {"man": "Mann"}}, config=sampling)
    assert query({"text": "A man.", "nbest": 16}, config=sampling).nbest == 16  # draws
    with pytest.raises(ApiError, match=r'"nbest" must lie between 1 and 16 \(--max-beam'):
        query({"text": "A man.", "nbest": 17}, config=sampling)
