"""The diagnosis catalogue's warnings (HD2xx): what nothing raised but a reader notices.
faults/rules.py takes them into the one list of rules, in this order."""

from __future__ import annotations

from harmony_doctor.faults.rule import Rule

WARNING_RULES = (
    Rule(
        "HD201",
        "unknown_channel",
        "warning",
        "Channel other than analysis, commentary or final",
        "harmony accepts any channel name, but servers route only the spec channels; SGLang "
        "drops messages on other channels silently.",
        "Treat the message as malformed; retry or constrain with a grammar.",
        catch_all=True,
    ),
    Rule(
        "HD202",
        "constrain_as_recipient",
        "warning",
        "<|constrain|> taken as the recipient",
        "A content type without a recipient (`<|channel|>final <|constrain|>json`) is parsed "
        "by openai-harmony as recipient `<|constrain|>json`: the message looks like a tool call.",
        "Use an openai-harmony with the fix, or ignore recipients that start with <|constrain|>.",
        ("openai/harmony#144", "vllm-project/vllm#45571"),
        catch_all=True,
        model_only=True,
    ),
    Rule(
        "HD203",
        "markup_leak",
        "warning",
        "Harmony markup inside a message",
        "Special or reserved tokens sit inside message content or a header field; harmony "
        "keeps them as text and they leak to the client.",
        "Strip special tokens from content, or retry; speculative decoding is a known source.",
        ("NVIDIA/TensorRT-LLM#9256", "vllm-project/vllm#35906"),
    ),
    Rule(
        "HD204",
        "missing_channel",
        "warning",
        "Assistant message without a channel",
        "gpt-oss always writes a channel; a message without one was rendered by a template, "
        "or the model left the format.",
        "Render earlier assistant turns with their channel (final, or analysis).",
        catch_all=True,
    ),
    Rule(
        "HD205",
        "markup_leak",
        "warning",
        "Harmony markup returned to the client",
        "A response's content (or a tool name) holds Harmony control text such as <|channel|> "
        "or <|message|>: no parser raised anything, but the server did not parse the output, "
        "or parsed it wrongly, and passed the markup on. Degenerate output from speculative "
        "decoding (EAGLE3 draft models) is a known source.",
        "Make sure whatever serves or shows the model parses gpt-oss output as Harmony (a "
        "server with gpt-oss support, llama.cpp with --jinja, an app that does not print the "
        "raw completion); upgrade it (vLLM PR #35906 strips leaked markup); turn speculative "
        "decoding off to see whether it is the source; strip <|...|> markup on the client "
        "meanwhile.",
        (
            "NVIDIA/TensorRT-LLM#9256",
            "NVIDIA/TensorRT-LLM#8713",
            "vllm-project/vllm#35906",
            "vllm-project/vllm#37295",
        ),
        catch_all=True,
    ),
    Rule(
        "HD206",
        "stripped_markup",
        "warning",
        "Harmony text with its special tokens stripped",
        "The text reads like Harmony output decoded with skip_special_tokens "
        "(`analysisGreet back.assistantfinalHi there!`): vLLM's `output:` log field and some "
        "clients drop <|channel|>, <|message|>, <|start|> and the stop tokens. The message "
        "boundaries are gone, so the stream cannot be replayed or checked.",
        "If an app or a server showed you this text, it does not parse gpt-oss output: run the "
        "model where Harmony is parsed (a server with gpt-oss support, llama.cpp with --jinja) "
        "so that reasoning and answer come apart. To check the stream itself, give the token "
        "ids (vLLM: `Generated response ... output_token_ids`, at DEBUG in newer versions, or "
        "the `return_token_ids` request option), or text decoded with "
        "skip_special_tokens=False.",
        catch_all=True,
    ),
)
