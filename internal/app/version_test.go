package app

import (
	"net/http"
	"strings"
	"testing"

	"backoffice/internal/buildinfo"
)

// `version` and `--version` print the build; they need no configuration, not even a sound one.
func TestVersionCommand(t *testing.T) {
	broken := envOfMap(map[string]string{"BACKOFFICE_LOG_LEVEL": "loud"})
	want := buildinfo.Read().Text()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		for _, env := range []func(string) string{noEnv, broken} {
			out, errOut, code := runMain(env, args...)
			if code != 0 || out != want || errOut != "" {
				t.Errorf("%v: exit %d, %q %q; want %q", args, code, out, errOut, want)
			}
		}
	}
	// go test records no commit: the answer says so and how to get one recorded.
	if !strings.Contains(want, "revision: unknown (built without version control information; build from a git checkout with: go build -buildvcs=true ./cmd/backoffice)") {
		t.Errorf("version of a build without a commit:\n%s", want)
	}
	if _, errOut, code := runMain(noEnv, "version", "now"); code != 2 || !strings.Contains(errOut, `unexpected argument "now"`) {
		t.Errorf("version now: exit %d %s", code, errOut)
	}
}

// serve's metrics carry the build too; with CORS configured, a preflight from the listed origin
// is answered on the running server.
func TestServeBuildInfoAndCORS(t *testing.T) {
	addr, _ := servedOps(t, map[string]string{"BACKOFFICE_CORS_ORIGINS": "https://crm.example.com"})
	b := buildinfo.Read()
	code, body := fetch(t, "http://"+addr+"/metrics")
	if code != 200 || !strings.Contains(body, `backoffice_build_info{goversion="`+b.GoVersion+`",modified="false",revision="`+b.Revision+`",vcs_time="`+b.Time+`",version="`+b.Version+`"} 1`) {
		t.Errorf("metrics: %d, no backoffice_build_info of %+v", code, b)
	}
	req, _ := http.NewRequest(http.MethodOptions, "http://"+addr+"/v1/audit-events", nil)
	req.Header.Set("Origin", "https://crm.example.com")
	req.Header.Set("Access-Control-Request-Method", "GET")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "https://crm.example.com" {
		t.Errorf("preflight: %d %v", res.StatusCode, res.Header)
	}
}
