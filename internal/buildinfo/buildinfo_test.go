package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFrom(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "backoffice", Version: "v0.0.0-20261125123700-9509014abcde+dirty"},
		Settings: []debug.BuildSetting{{Key: "-buildvcs", Value: "true"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "9509014abcdef0123456789abcdef0123456789a"}, {Key: "vcs.time", Value: "2026-11-25T12:37:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "backoffice", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "-buildvcs", Value: "false"}}}
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		want Info
		text []string // lines the version command prints
	}{
		{"stamped, modified tree", stamped,
			Info{Version: "v0.0.0-20261125123700-9509014abcde+dirty", Revision: "9509014abcdef0123456789abcdef0123456789a", Time: "2026-11-25T12:37:00Z", Modified: true, GoVersion: "go1.26.8"},
			[]string{"backoffice v0.0.0-20261125123700-9509014abcde+dirty", "revision: 9509014abcdef0123456789abcdef0123456789a, with uncommitted changes", "commit time: 2026-11-25T12:37:00Z"}},
		{"no version control information", bare,
			Info{Version: "(devel)", Revision: Unknown, Time: Unknown, GoVersion: "go1.26.8"},
			[]string{"backoffice (devel)", "revision: unknown (built without version control information; build from a git checkout with: go build -buildvcs=true ./cmd/backoffice)", "commit time: unknown"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := From(c.bi)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			lines := strings.Split(got.Text(), "\n")
			if diff := cmp.Diff(c.text, lines[:3]); diff != "" || !strings.HasPrefix(lines[3], "go: go1.26.8 ") {
				t.Errorf("text (-want +got):\n%s\n%s", diff, got.Text())
			}
		})
	}
	if got := From(nil); got.Version != "(devel)" || got.Revision != Unknown || got.GoVersion == "" {
		t.Errorf("no build info: %+v", got)
	}
}
