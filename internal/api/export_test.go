package api

// For the tests of package api_test: GoCmd runs the go command, GeneratedDir makes a directory
// for a generated package.
var (
	GoCmd        = goCmd
	GeneratedDir = generatedDir
)
