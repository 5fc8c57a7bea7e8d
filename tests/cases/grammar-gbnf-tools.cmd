grammar --format gbnf --tool get_weather --tool browser.search --require-return --require-call
