decode -
