render --style passthrough -
