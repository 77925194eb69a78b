package keyfunc

// ParseAddr is parseAddr, for the tests of package keyfunc_test.
var ParseAddr = parseAddr
