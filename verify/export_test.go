package verify

// Reason exposes reason to the tests.
var Reason = reason

// ParseJWKS exposes parseJWKS to the tests.
var ParseJWKS = parseJWKS
