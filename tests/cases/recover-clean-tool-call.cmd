recover -
