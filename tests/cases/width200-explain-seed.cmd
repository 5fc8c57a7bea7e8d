explain --width 200 -
