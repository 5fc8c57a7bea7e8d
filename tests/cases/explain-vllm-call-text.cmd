explain --request chatcmpl-b2 -
