package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The principals file lists exactly the dataset's principals, one line each, each beside the
// lead it belongs to, which the dataset holds: a decrypt_many request it names is one the service
// answers.
func TestPrincipalLinesAreTheDatasetsPrincipals(t *testing.T) {
	const leads = 5
	var out bytes.Buffer
	g := &gen{w: bufio.NewWriter(&out), rnd: rand.New(rand.NewPCG(1, 2))}
	g.dataset(3, leads, 2)
	if err := g.w.Flush(); err != nil {
		t.Fatal(err)
	}
	var ds struct {
		Leads      []struct{ ID string }
		Principals []struct{ ID, LeadID string }
	}
	if err := json.Unmarshal(out.Bytes(), &ds); err != nil {
		t.Fatal(err)
	}
	var leadIDs, want []string
	for _, l := range ds.Leads {
		leadIDs = append(leadIDs, l.ID)
	}
	for _, p := range ds.Principals {
		want = append(want, p.LeadID+" "+p.ID)
	}
	got := strings.Split(strings.TrimSuffix(string(principalLines(leads)), "\n"), "\n")
	if len(got) != leads || !slices.Equal(got, want) {
		t.Fatalf("principals file:\n%v\ndataset's principals:\n%v", got, want)
	}
	for _, line := range got {
		if lead, _, _ := strings.Cut(line, " "); !slices.Contains(leadIDs, lead) {
			t.Errorf("line %q names lead %s, which the dataset does not hold", line, lead)
		}
	}
}
