package api

// GoCmd runs the go command for the tests of package api_test.
var GoCmd = goCmd
