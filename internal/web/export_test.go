package web

// StartChromium is startChromium, for the tests of package web_test,
// which put the pages behind the real gate.
var StartChromium = startChromium
