explain --grammar --request chatcmpl-b2 -
