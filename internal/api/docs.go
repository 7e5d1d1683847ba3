package api

import (
	"embed"
	"net/http"
)

// The reference page at GET /docs is Redoc's standalone bundle (redoc 2.5.1 from the npm
// registry, `npm pack redoc@2.5.1`, file bundles/redoc.standalone.js, MIT: redoc/LICENSE, with
// the notices of what it bundles beside it) rendering GET /openapi.yaml. Everything is in the
// binary, so the page works where the browser has no network but the service.
//
//go:embed redoc/index.html redoc/redoc.standalone.js
var redocFiles embed.FS

// docsPolicy keeps the page to what the service serves: no script, style, font or image from
// anywhere else, and no request to another origin. Redoc styles with inline style elements and
// searches in a worker it starts from a blob.
const docsPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func serveDocs(name, contentType string) http.HandlerFunc {
	b, err := redocFiles.ReadFile(name)
	if err != nil {
		panic(err) // the embed directive names the file: it cannot be missing
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Content-Security-Policy", docsPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(b)
	}
}
