rules hd999
