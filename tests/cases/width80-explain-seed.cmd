explain --width 80 -
