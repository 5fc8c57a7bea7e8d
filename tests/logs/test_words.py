"""A header remainder's words held in a window (logs/words.py): the head and tail of the words,
and of each word past MAX_WORD characters its ends, with what was left out counted."""

from __future__ import annotations

from harmony_doctor.logs.words import CUT, HEAD_WORDS, MAX_WORD, TAIL_WORDS, Words


def test_a_word_past_the_bound_is_held_as_its_ends_with_the_rest_counted() -> None:
    word = "a" * 600 + "m" * 1_000_000 + "z" * 600
    for words in (Words().split(f"to=f {word} json"), _added(["to=f", word, "json"])):
        held = words.remainder(True, "text")
        assert held.words[0] == "to=f" and held.words[2] == "json"
        kept = held.words[1]
        assert len(kept) == MAX_WORD + 1 and kept.count(CUT) == 1
        assert kept.startswith("a" * 512) and kept.endswith("z" * 512)
        assert held.cut == (0, len(word) - MAX_WORD, 0)  # the true length is known
        assert len(kept) - len(CUT) + held.cut[1] == len(word)


def test_words_within_the_bound_are_held_whole_and_no_cut_is_recorded() -> None:
    word = "w" * MAX_WORD
    held = Words().split(f"{word} x").remainder(False, "list")
    assert held.words == (word, "x") and held.cut == () and held.unread == 0


def test_the_cut_counts_follow_the_words_kept_in_the_window() -> None:
    long = "y" * (MAX_WORD + 10)
    count = HEAD_WORDS + TAIL_WORDS + 5
    held = Words().split(" ".join([long] + ["w"] * (count - 2) + [long])).remainder(True, "some")
    assert len(held.words) == HEAD_WORDS + TAIL_WORDS and held.unread == 5
    assert held.cut[0] == held.cut[-1] == 10 and sum(held.cut) == 20


def _added(words: list[str]) -> Words:
    held = Words()
    for word in words:
        held.add(word)
    return held


def test_a_long_text_is_held_as_its_ends_with_the_characters_between_counted() -> None:
    from harmony_doctor.logs.words import MAX_TEXT, text_ends

    text = "a" * MAX_TEXT + "b" * 10 + "c" * MAX_TEXT + "  \n tail not used"
    stop = 2 * MAX_TEXT + 10 + 3  # the whitespace after the text is stripped, as rstrip() does
    held, cut = text_ends(text, stop)
    assert held == "a" * (MAX_TEXT // 2) + CUT + "c" * (MAX_TEXT // 2)
    assert cut == len(text[:stop].rstrip()) - MAX_TEXT
    short = "x" * MAX_TEXT + " \t"
    assert text_ends(short, len(short)) == ("x" * MAX_TEXT, 0)  # whole up to the bound
