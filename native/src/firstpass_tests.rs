//! Tests of the first pass (firstpass.rs).
use super::*;
use crate::testing::anatomy_spec;

/// The anatomy tests' patterns (crate::testing::anatomy_spec: this file's lines need none of
/// them changed), the catalogue's one form and the extractor's own patterns.
fn spec() -> Spec {
    Spec {
        anatomy: anatomy_spec(),
        forms: vec![r"unexpected\s*token\s*(?P<token>\d+)".to_string()],
        traceback: r"^(?:[╭┌][─ ]*)?Traceback|^File |^[│╭]".to_string(),
        request: r"\bReceived request \S".to_string(),
        model_output: "model output:".to_string(),
        frame_source: ".py:".to_string(),
    }
}

const INFO: &str = "(APIServer pid=7) INFO 11-01 00:00:01 [a.py:1] ";

#[test]
fn an_ordinary_line_tells_its_process_what_observe_keeps() {
    let p = Reader::new(spec()).unwrap();
    let line = format!("{INFO}Received request x: vllm");
    let o = p.ordinary(&line).unwrap();
    assert_eq!(o.key, "APIServer pid=7");
    assert_eq!(o.timestamp, Some("11-01 00:00:01"));
    assert_eq!(o.pid, Some(7));
    assert_eq!(o.server, Some(Server::Shape(0)));
    assert!(o.request && o.record);
    let o = p
        .ordinary("(APIServer pid=7) INFO 11-01 00:00:01 [a.py:1]")
        .unwrap();
    assert_eq!(o.server, Some(Server::MonthDay));
    assert!(!o.request && !o.record);
    assert!(p
        .ordinary("")
        .is_some_and(|o| o.key.is_empty() && !o.record));
}

#[test]
fn lines_that_may_begin_or_end_something_are_left_to_python() {
    let p = Reader::new(spec()).unwrap();
    let quiet = [
        "Traceback (most recent call last):",
        "File \"/x/vllm/a.py\", line 1",
        "  indented source",
    ];
    let python = [
        "Unexpected token 12 while expecting start token",
        "a leak <|channel|>",
        "Model output: hi",
        "a | gutter",
        "caf\u{e9}",
    ];
    for text in quiet {
        assert_eq!(
            p.classify(&format!("{INFO}{text}"), None),
            Class::Quiet,
            "{text:?}"
        );
    }
    for text in python {
        assert_eq!(
            p.classify(&format!("{INFO}{text}"), None),
            Class::Python,
            "{text:?}"
        );
    }
    // no prefix: it may be the rest of a wrapped line; QUIET when the line before is known
    // and no form runs from its text into this one
    assert_eq!(p.classify("plain words", None), Class::Python);
    let before = format!("{INFO}hello");
    assert_eq!(p.classify("plain words", Some(&before)), Class::Quiet);
    let wrapped = format!("{INFO}got unexpected to");
    assert_eq!(p.classify("ken 5", Some(&wrapped)), Class::Python);
    assert_eq!(
        p.classify("unexpected token 5", Some(&before)),
        Class::Python
    );
    assert_eq!(
        p.classify("plain \x1b[0m words", Some(&before)),
        Class::Python
    );
    assert!(p.ordinary(&format!("{INFO}plain words")).is_some());
}

#[test]
fn absorbed_lines_are_summed_per_process_in_the_order_last_seen() {
    let mut p = FirstPass::new(Arc::new(Reader::new(spec()).unwrap()));
    let fed = Fed::Absorbed;
    assert_eq!(p.absorb(1, &format!("{INFO}Received request a"), 4), fed);
    assert_eq!(p.absorb(2, "(Engine pid=8) x", 4), fed);
    assert_eq!(p.absorb(3, &format!("{INFO}b"), 4), fed);
    // a third process past the room
    assert_eq!(p.absorb(4, "(Other pid=9) y", 2), Fed::Quiet);
    let head = format!("{INFO}Traceback (most recent call last):");
    assert_eq!(p.absorb(5, &head, 4), Fed::Quiet);
    let error = format!("{INFO}Unexpected token 12");
    assert_eq!(p.absorb(6, &error, 4), Fed::Python);
    let taken = p.take();
    assert_eq!(taken.len(), 2);
    assert_eq!(taken[0].key, "Engine pid=8");
    assert_eq!(taken[0].record_line, Some(2));
    assert_eq!(taken[0].earlier_record_line, None);
    let a = &taken[1];
    assert_eq!(a.key, "APIServer pid=7");
    assert_eq!(a.lines, 2);
    assert_eq!(a.timestamp, Some(("11-01 00:00:01".to_string(), 3)));
    assert_eq!(a.request_line, Some(1));
    assert_eq!((a.record_line, a.earlier_record_line), (Some(3), Some(1)));
    assert_eq!(a.server, Some((Server::MonthDay, 3)));
    assert!(!p.holds() && p.take().is_empty());
}
