package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// The principals file lists exactly the dataset's principals, each with its own lead: a
// decrypt_many request it names is one the service answers.
func TestPrincipalLinesAreTheDatasetsPrincipals(t *testing.T) {
	var out bytes.Buffer
	g := &gen{w: bufio.NewWriter(&out), rnd: rand.New(rand.NewPCG(1, 2))}
	g.dataset(3, 5, 2)
	if err := g.w.Flush(); err != nil {
		t.Fatal(err)
	}
	var ds struct {
		Principals []struct{ ID, LeadID string }
	}
	if err := json.Unmarshal(out.Bytes(), &ds); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range ds.Principals {
		want = append(want, p.LeadID+" "+p.ID)
	}
	got := strings.Split(strings.TrimSuffix(string(principalLines(5)), "\n"), "\n")
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("principals file:\n%v\ndataset's principals:\n%v", got, want)
	}
}
