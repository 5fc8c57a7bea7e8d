//! The Python catalogue the unit tests hand the core (harmony_doctor/faults/), written
//! out by tests/test_native_fixture.py: `pytest --update-golden` rewrites this file and
//! a test fails while it differs from the catalogue. Not the crate's: tests only.

use std::sync::LazyLock;

use crate::anchors::{Counts, Shape};

/// The error anchors (`catalogue.ERROR_ANCHORS`).
pub(crate) const ANCHORS: &[&[u8]] = &[
    b"HarmonyError",
    b"tokens remaining",
    b"expecting start token",
    b"nknown role",
    b"channel marker",
    b"Unexpected EOS",
    b"contain a role",
    b"decode header",
    b"decode tokens",
    b"vocab file",
    b"TIKTOKEN_ENCODINGS_BASE",
    b"conversation JSON",
    b"should have a name",
    b"stop token",
    b"disallowed special token",
    b"tool call",
    b"parse input at pos",
    b"non-terminal state",
    b"recovered raw output",
    b"tags in the content",
    b"nknown recipient",
    b"output messages",
    b"without recipient",
    b"nknown channel",
    b"end of input",
    b"peg-native",
    b"parse arguments",
    b"content and thinking",
    b"structure_info",
    b"arguments as JSON",
    b"$prop.Type",
    b"reverse mapping",
    b"fell back to raw",
    b"xpected",
    b"out of tokens",
    b"nexpected end of",
    b"xcepted",
    b"nvalid role",
    b"nrecognized role",
    b"nrecognised role",
    b"nsupported role",
    b"nexpected role",
    b"ad role",
    b"arse",
    b"match the expected",
    b"match expected",
    b"end of",
    b"arsing",
    b"ARSE",
    b"mapping",
    b"armony parser",
    b"non-terminal",
    b"raw text",
    b"raw output",
    b"recipient",
    b"nsupported channel",
    b"nvalid channel",
    b"nexpected channel",
    b"output message",
    b"parsed message",
    b"armony message",
    b"with Harmony",
    b"with harmony",
    b"for Harmony",
    b"for harmony",
    b"with gpt-oss",
    b"for gpt-oss",
    b"by Harmony",
    b"by harmony",
    b"in the content",
    b"in content",
    b"in its content",
    b"in the message",
    b"both",
    b"openai_harmony.HarmonyError",
];

/// The markup-line rule (`catalogue.MARKUP_LINE`).
pub(crate) const MARKUP_LINE: &str = "(?i)(?:content|reasoning_content|reasoning|text|output_text|name|recipient|channel|content_type)[\"']?[ \\t\\n\\r\\x0C\\x0B]*[:=][ \\t\\n\\r\\x0C\\x0B]*[\"']|(?:Some\\(|\\[)[ \\t\\n\\r\\x0C\\x0B]*\\\\*\"";

/// The line shapes (`shapes.LINE_SHAPES`).
pub(crate) static SHAPES: LazyLock<Vec<Shape>> = LazyLock::new(|| {
    vec![
        Shape {
            counts: Counts::Ids,
            literals: vec![b"output_token_ids".to_vec()],
            words: vec![b"".to_vec()],
            blanks: true,
            then: b":=".to_vec(),
            line: None,
        },
        Shape {
            counts: Counts::Access,
            literals: vec![b"\x22POST /".to_vec(), b"\x22GET /v1/".to_vec()],
            words: vec![b"v1/chat/completions".to_vec(), b"v1/responses".to_vec(), b"v1/completions".to_vec(), b"v1/messages".to_vec(), b"generate".to_vec(), b"chat/completions".to_vec(), b"responses".to_vec(), b"completions".to_vec()],
            blanks: false,
            then: b" ?\x22".to_vec(),
            line: None,
        },
        Shape {
            counts: Counts::Access,
            literals: vec![b"| POST".to_vec(), b"| GET".to_vec()],
            words: vec![b"".to_vec()],
            blanks: false,
            then: b"".to_vec(),
            line: Some("\\| (?:POST|GET)[ \\t\\n\\r\\f\\v]+\"/(?:api/chat|api/generate|v1/[a-z/]+)\"".into()),
        },
        Shape {
            counts: Counts::Received,
            literals: vec![b"Received request ".to_vec()],
            words: vec![b"".to_vec()],
            blanks: false,
            then: b"".to_vec(),
            line: None,
        },
        Shape {
            counts: Counts::Access,
            literals: vec![b"request: POST /".to_vec(), b"request: POST to /".to_vec()],
            words: vec![b"v1/chat/completions".to_vec(), b"chat/completions".to_vec(), b"v1/completions".to_vec(), b"completions".to_vec(), b"completion".to_vec(), b"v1/responses".to_vec(), b"responses".to_vec(), b"v1/messages".to_vec(), b"infill".to_vec(), b"api/chat".to_vec()],
            blanks: false,
            then: b" ".to_vec(),
            line: None,
        },
    ]
});

/// Each line shape as the regex the Python core searches a candidate line with.
pub(crate) const SHAPE_REGEXES: &[&str] = &[
    "(?:output_token_ids)[ \\t\\n\\r\\f\\v]*[:=]",
    "(?:\"POST /|\"GET /v1/)(?:v1/chat/completions|v1/responses|v1/completions|v1/messages|generate|chat/completions|responses|completions)[ \\?\"]",
    "\\| (?:POST|GET)[ \\t\\n\\r\\f\\v]+\"/(?:api/chat|api/generate|v1/[a-z/]+)\"",
    "(?:Received request )",
    "(?:request: POST /|request: POST to /)(?:v1/chat/completions|chat/completions|v1/completions|completions|completion|v1/responses|responses|v1/messages|infill|api/chat)[ ]",
];

/// The level words a vLLM stamp may follow, the key a pid follows (`log_words`).
pub(crate) const LEVELS: &[&str] = &["INFO", "ERROR", "WARNING", "DEBUG", "CRITICAL", "WARN"];
pub(crate) const PID_KEY: &str = "pid";

/// A stamp's words, as the cores of the tests share them.
pub(crate) static STAMPS: LazyLock<std::sync::Arc<crate::stamps::StampWords>> =
    LazyLock::new(|| std::sync::Arc::new(crate::stamps::StampWords::new(LEVELS, PID_KEY).expect("a stamp's words")));

/// A syslog stamp's months (`log_words.MONTHS`).
pub(crate) const MONTHS: &[&str] = &["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// The wrappers' words (`log_words.wrapper_words()`).
pub(crate) static WRAPPERS: LazyLock<crate::wrapper_words::Words> = LazyLock::new(|| {
    crate::wrapper_words::Words::new(&crate::wrapper_words::WordList {
        levels: &["INFO", "ERROR", "WARNING", "DEBUG", "CRITICAL", "WARN"].map(String::from),
        pid_key: "pid",
        months: &["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].map(String::from),
        cri_streams: &["stdout", "stderr"].map(String::from),
        cri_whole: "F",
        docker: &["log", "stream", "time"].map(String::from),
        docker_attrs: "attrs",
        journal_message: "MESSAGE",
        journal_marks: &["__REALTIME_TIMESTAMP", "_PID", "__CURSOR"].map(String::from),
        journal_pid: "_PID",
        json_fields: &["message", "line", "log"].map(String::from),
        meta_keys: &["time", "timestamp", "@timestamp", "ts", "date", "_timestamp", "labels", "stream", "host", "hostname", "source_type", "kubernetes"].map(String::from),
        pid_keys: &["pid", "_PID"].map(String::from),
    })
    .expect("the wrappers' words")
});

/// A `Generated response` line's words (`log_words.completion_words()`).
pub(crate) static COMPLETIONS: LazyLock<crate::vllm::Words> = LazyLock::new(|| {
    let w = CompletionWords {
        generated: "Generated response ",
        output_key: "output_token_ids",
        finish_key: "finish_reason",
        modes: &[" (streaming delta)", " (streaming complete)"].map(String::from),
        no_ids: "None",
        no_reasons: &["None", "streaming_complete"].map(String::from),
    };
    crate::vllm::Words::new(w.generated, w.output_key, w.finish_key, w.modes, w.no_ids, w.no_reasons)
        .expect("a completion line's words")
});

struct CompletionWords<'a> {
    generated: &'a str,
    output_key: &'a str,
    finish_key: &'a str,
    modes: &'a [String],
    no_ids: &'a str,
    no_reasons: &'a [String],
}
