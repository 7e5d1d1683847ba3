// Package docs holds no code: its tests keep the repository's documentation self-contained. A
// user's clone has the repository and nothing else, so every relative link of its markdown must
// land on a file of the repository (and on a heading of it, when it names one), and nothing may
// send the reader to the team's private reference beside the repository.
package docs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestMarkdownLinks fails on a relative link, in any markdown file of the repository, whose
// target is missing, lies outside the repository, is not part of it (ignored by git), or names a
// heading its markdown target does not have.
func TestMarkdownLinks(t *testing.T) {
	repo := openRepo(t)
	for _, name := range repo.files {
		if path.Ext(name) != ".md" {
			continue
		}
		for _, problem := range repo.checkLinks(name) {
			t.Errorf("%s", problem)
		}
	}
}

// TestNoPrivateReference fails on any mention of the team's private reference in any file of the
// repository (a shared/ folder beside it, the documents it holds, their section numbers): a clone
// does not have it, so the code and the docs say the rule in their own words instead.
func TestNoPrivateReference(t *testing.T) {
	repo := openRepo(t)
	for _, name := range repo.files {
		for _, problem := range repo.checkPrivateReference(name) {
			t.Errorf("%s", problem)
		}
	}
}

// TestReadmeListsEveryDoc fails when a file under docs/ is not linked from the README, which is
// where a new user looks for it.
func TestReadmeListsEveryDoc(t *testing.T) {
	repo := openRepo(t)
	linked := map[string]bool{}
	for _, l := range repo.links("README.md") {
		if p, _, ok := localTarget(l.target); ok {
			linked[path.Clean(p)] = true
		}
	}
	for _, name := range repo.files {
		if path.Dir(name) == "docs" && path.Ext(name) == ".md" && !linked[name] {
			t.Errorf("README.md does not link to %s (add it to the Documentation list)", name)
		}
	}
}

// repo is a tree of files: root on disk, and the slash-separated names of its files.
type repo struct {
	root  string
	files []string
	set   map[string]bool
}

// openRepo finds the module root above the test's directory and lists its files.
func openRepo(t *testing.T) *repo {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := listFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	return newRepo(root, files)
}

func newRepo(root string, files []string) *repo {
	r := &repo{root: root, files: files, set: map[string]bool{}}
	for _, f := range files {
		r.set[f] = true
	}
	return r
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// listFiles names the repository's files: those git tracks or would track (new files not yet
// added count, ignored ones do not, since a clone would not have them). Without git (a source
// archive), every file under root but those of hidden directories.
func listFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			// A file deleted but not yet committed is listed by --cached; it is not there.
			if f != "" && exists(filepath.Join(root, filepath.FromSlash(f))) {
				files = append(files, f)
			}
		}
		slices.Sort(files)
		return slices.Compact(files), nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (r *repo) read(name string) []byte {
	b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(name)))
	if err != nil {
		return nil
	}
	return b
}

// hasDir reports whether name is a directory holding files of the repository.
func (r *repo) hasDir(name string) bool {
	if name == "." {
		return true
	}
	prefix := name + "/"
	i, _ := slices.BinarySearch(r.files, prefix)
	return i < len(r.files) && strings.HasPrefix(r.files[i], prefix)
}

// checkLinks returns a problem for each broken relative link of the markdown file name.
func (r *repo) checkLinks(name string) []string {
	var problems []string
	for _, l := range r.links(name) {
		if p := r.checkLink(name, l.target); p != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", name, l.line, l.target, p))
		}
	}
	return problems
}

// checkLink says what is wrong with target, a link in the markdown file from, or "".
func (r *repo) checkLink(from, target string) string {
	p, anchor, ok := localTarget(target)
	if !ok {
		return ""
	}
	resolved := from
	if p != "" {
		if strings.HasPrefix(p, "/") { // GitHub resolves these from the repository's root
			resolved = path.Clean(strings.TrimPrefix(p, "/"))
		} else {
			resolved = path.Join(path.Dir(from), p)
		}
		if resolved == ".." || strings.HasPrefix(resolved, "../") {
			return "points outside the repository"
		}
		if !r.set[resolved] && !r.hasDir(resolved) {
			return "no such file in the repository"
		}
	}
	if anchor != "" && path.Ext(resolved) == ".md" && r.set[resolved] {
		if !slices.Contains(anchors(r.read(resolved)), anchor) {
			return fmt.Sprintf("%s has no heading #%s", resolved, anchor)
		}
	}
	return ""
}

// hasScheme matches a link with a URL scheme (https:, mailto:, …): not a file of the repository.
var hasScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// localTarget splits a link target into its (unescaped) path and anchor; ok is false for links
// that leave the repository by design (a URL with a scheme, or protocol-relative).
func localTarget(target string) (p, anchor string, ok bool) {
	target = strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
	if target == "" || hasScheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "", "", false
	}
	p, anchor, _ = strings.Cut(target, "#")
	p, _, _ = strings.Cut(p, "?")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	return p, anchor, true
}

type link struct {
	line   int
	target string
}

var (
	fence = regexp.MustCompile("^ {0,3}(```|~~~)")
	// inlineLink is [text](target) or ![alt](target), with an optional title after the target.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// refDefinition is a reference-style link's definition: [label]: target
	refDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(\S+)`)
)

// links lists the links of a markdown file, outside code blocks and code spans.
func (r *repo) links(name string) []link {
	return parseLinks(r.read(name))
}

func parseLinks(md []byte) []link {
	var out []link
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = stripCodeSpans(line)
		if m := refDefinition.FindStringSubmatch(line); m != nil {
			out = append(out, link{n, m[1]})
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{n, m[1]})
		}
	}
	return out
}

// stripCodeSpans removes `code spans` (of any number of backticks) from a line: what they hold
// is text, not links.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			b.WriteString(line)
			return b.String()
		}
		b.WriteString(line[:i])
		n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
		ticks, rest := line[i:i+n], line[i+n:]
		end := closingTicks(rest, ticks)
		if end < 0 { // no closing run: the backticks are literal
			b.WriteString(ticks)
			line = rest
			continue
		}
		line = rest[end+len(ticks):]
	}
}

// closingTicks finds a run of exactly len(ticks) backticks in s.
func closingTicks(s, ticks string) int {
	for from := 0; ; {
		i := strings.Index(s[from:], ticks)
		if i < 0 {
			return -1
		}
		i += from
		j := i + len(ticks)
		if (i == 0 || s[i-1] != '`') && (j == len(s) || s[j] != '`') {
			return i
		}
		from = j
		for from < len(s) && s[from] == '`' {
			from++
		}
	}
}

var (
	heading   = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlID    = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	linkInHdr = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// anchors lists the fragment ids a markdown file offers: its headings' slugs as GitHub makes
// them (repeats get -1, -2, …) and explicit <a id> or <a name> anchors.
func anchors(md []byte) []string {
	var out []string
	count := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := count[s]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", s, n))
		} else {
			out = append(out, s)
		}
		count[s]++
	}
	return out
}

// slug is GitHub's id for a heading: the text as rendered (link targets, backticks and
// asterisks gone), lower case, without punctuation but - and _, spaces made hyphens.
func slug(text string) string {
	text = linkInHdr.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, c := range strings.ToLower(text) {
		switch {
		case c == ' ':
			b.WriteByte('-')
		case c == '-' || c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c):
			b.WriteRune(c)
		}
	}
	return b.String()
}

// privateReference matches mentions of the team's reference beside the repository: any path
// through a shared/ folder above it, or its seed/ and design/ folders by name; a numbered section
// of its seed document (the word, then a section number or "section"), that document's rules
// (the word in the possessive), a section of the contract as it numbers them; its decisions file
// and its design documents. The operations' own numbers (4.1 to 4.5, docs/api.md) and the
// sections of RFCs are the repository's or public, and stay. The pattern is built from pieces so
// that this file does not match it.
var privateReference = regexp.MustCompile(`\.\./(\.\./)*` + "shared" + `\b|\b` + "shared" + `/(seed|design)/` +
	`|(?i)\b` + "seed" + `('s\b| (section )?[0-9])` +
	`|(?i)\bsection [0-9]+(\.[0-9]+)* of the (contract|` + "seed" + `)` +
	`|(?i)\bcontract-` + "decisions" +
	`|(?i)\bthe design ` + "documents?")

// checkPrivateReference returns a problem for each line of a text file that mentions the
// team's private reference.
func (r *repo) checkPrivateReference(name string) []string {
	b := r.read(name)
	if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return nil // binary
	}
	var problems []string
	for n, line := range strings.Split(string(b), "\n") {
		if privateReference.MatchString(line) {
			problems = append(problems, fmt.Sprintf("%s:%d: mentions the team's private reference, which a clone does not have: link to docs/ instead", name, n+1))
		}
	}
	return problems
}
