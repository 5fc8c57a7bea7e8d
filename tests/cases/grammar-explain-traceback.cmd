explain --grammar -
