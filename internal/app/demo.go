package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// demoDir is where `serve --demo` keeps its database and its development key.
const demoDir = "backoffice-demo"

// The demo's credentials are printed on every start; they are for a laptop, never production.
const (
	demoAPIKey        = "demo-staff-api-key-not-for-production"
	demoPartnerAPIKey = "demo-partner-api-key-not-for-production"
	demoSessionToken  = "demo-session-token-not-for-production"
)

type demoSetup struct {
	gatewayURL string
	stopSim    func()
}

func (d *demoSetup) close() {
	if d.stopSim != nil {
		d.stopSim()
	}
}

// Where `serve --demo` keeps its database and development key, relative to the working directory.
var (
	demoDatabasePath = filepath.Join(demoDir, "backoffice.db")
	demoKeyPath      = filepath.Join(demoDir, "master.key")
	// demoCheckpointsPath is where the demo's serve signs audit checkpoints, and its verify reads.
	demoCheckpointsPath = filepath.Join(demoDir, "audit-checkpoints.jsonl")
)

// prepareDemo fills the configuration gaps: a SQLite file in demoDir, a development master key
// kept beside it, and an in-process gateway simulator. Anything configured explicitly wins.
func prepareDemo(ctx context.Context, cfg *Config, log *slog.Logger) (*demoSetup, error) {
	if err := os.MkdirAll(demoDir, 0o700); err != nil {
		return nil, err
	}
	keyFromDemo, err := demoConfig(cfg, true)
	if err != nil {
		return nil, err
	}
	if keyFromDemo {
		log.Warn("DEMO MODE: using a development master key from " + demoKeyPath +
			"; it is NOT for production: set BACKOFFICE_MASTER_KEY there")
	}
	d := &demoSetup{}
	if cfg.GatewayURL == "" {
		url, stop, err := startSimulator(ctx, log)
		if err != nil {
			return nil, err
		}
		cfg.GatewayURL, d.gatewayURL, d.stopSim = url, url, stop
	}
	return d, nil
}

// demoConfig points a --demo configuration at the demo's database and development master key,
// wherever no other is configured. serve makes them (create, prepareDemo); every other command
// finds them, so that it reads and writes what the running demo serves, and resolves them once,
// as it parses its command line (Config.parseArgs). It does nothing without --demo.
func demoConfig(cfg *Config, create bool) (keyFromDemo bool, err error) {
	if !cfg.Demo {
		return false, nil
	}
	if cfg.AuditCheckpoints == "" {
		cfg.AuditCheckpoints = demoCheckpointsPath
	}
	if cfg.DatabaseURL == defaultDatabaseURL {
		if !create {
			if _, err := os.Stat(demoDatabasePath); err != nil {
				return false, noDemoError(err)
			}
		}
		cfg.DatabaseURL = "sqlite:" + demoDatabasePath
	}
	if cfg.MasterKey != "" || cfg.MasterKeys != "" {
		return false, nil
	}
	key, err := demoKey(demoKeyPath, create)
	if err != nil {
		return false, noDemoError(err)
	}
	cfg.MasterKey = secret(key)
	return true, nil
}

// parseArgs parses the command line of a command with --demo (databaseFlags) as parseArgs does,
// and resolves --demo in c (demoConfig): the one place a command does, so that everything it
// calls after reads the demo's database, key and checkpoints from c as they are.
func (c *Config) parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if _, err := demoConfig(c, false); err != nil {
		return nil, err
	}
	return pos, nil
}

// parseNoArgs is parseNoArgs, for a command with --demo: see Config.parseArgs.
func (c *Config) parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	_, err := demoConfig(c, false)
	return err
}

func noDemoError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		dir, _ := filepath.Abs(demoDir)
		return fmt.Errorf("--demo: no demo in %s: start `backoffice serve --demo` in this directory first", dir)
	}
	return fmt.Errorf("--demo: %w", err)
}

// demoKey reads the development key, making it on first use when create is set.
func demoKey(path string, create bool) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !create || !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	key := secrets.NewKey()
	return key, os.WriteFile(path, []byte(key+"\n"), 0o600)
}

// load imports the demo dataset into an empty database, the demo's own only (own): its keys are
// printed for all to read, and its users hold every permission.
func (d *demoSetup) load(ctx context.Context, st *store.Store, ring *secrets.Ring, own bool) error {
	empty, err := st.IsEmpty(ctx)
	if err != nil || !empty {
		return err
	}
	if !own {
		return errors.New("--demo loads its dataset (users with every permission, API keys printed for all to read) only into its own database, " +
			"sqlite:" + demoDatabasePath + ", and BACKOFFICE_DATABASE_URL names another, which is empty: leave out --demo (load your own data: README.md), or unset BACKOFFICE_DATABASE_URL")
	}
	_, err = dataset.Import(ctx, st, demoDataset(time.Now().UTC()), ring)
	return err
}

// demoOwnDatabase: the database is the demo's own (not one BACKOFFICE_DATABASE_URL named).
func (c Config) demoOwnDatabase() bool {
	return c.Demo && c.DatabaseURL == "sqlite:"+demoDatabasePath
}

// demoID makes the demo's fixed, readable ids (valid version-4 uuids).
func demoID(n int) domain.ID { return domain.ID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n)) }

// Fixed ids of the demo records the printed curl lines use.
var (
	demoLead       = demoID(301)
	demoPrincipal  = demoID(401)
	demoMerchant   = demoID(501)
	demoDocument   = demoID(601)
	demoOrder      = demoID(801)
	demoLineItem   = demoID(1101)
	demoTerminalID = "TID/DEMO 0001"
	// demoBareLineItem has no inventory unit and no shipment: its push answers both as null.
	demoBareLineItem = demoID(1102)
)

func ptr[T any](v T) *T { return &v }

func demoDataset(now time.Time) *dataset.Dataset {
	staff, partnerUser := demoID(101), demoID(102)
	partnerA, partnerB := demoID(1), demoID(2)
	stamps := domain.Stamps{CreatedAt: now, CreatedBy: staff, UpdatedAt: now, UpdatedBy: staff}
	model := demoID(701)
	unit, equipment, varsheet := demoID(901), demoID(1001), demoID(1201)
	bareEquipment := demoID(1002)
	plans := []domain.CardPlan{
		{ID: demoID(201), Code: "visa", DisplayName: "Visa", SortOrder: 1},
		{ID: demoID(202), Code: "mastercard", DisplayName: "Mastercard", SortOrder: 2},
		{ID: demoID(203), Code: "discover", DisplayName: "Discover", SortOrder: 3},
		{ID: demoID(204), Code: "amex", DisplayName: "American Express", SortOrder: 4},
	}
	settings, _ := json.Marshal(map[string]any{
		"tips":         map[string]any{"enabled": true, "presetsPercent": []float64{15, 18, 20}, "allowCustom": true},
		"tax":          map[string]any{"enabled": true, "ratePercent": "8.250"},
		"avs":          map[string]any{"enabled": true, "mode": "zip"},
		"receipt":      map[string]any{"merchantCopy": true, "customerCopy": "prompt", "headerLines": []string{"DEMO COFFEE"}, "footerLines": []string{"Thank you"}},
		"transactions": map[string]any{"sale": true, "refund": true, "void": true, "preAuth": false, "manualEntry": true, "cashBack": true},
		"autoBatch":    map[string]any{"enabled": true, "time": "23:30"},
	})
	ds := &dataset.Dataset{
		Partners: []domain.Partner{{ID: partnerA, Name: "Demo ISO"}, {ID: partnerB, Name: "Other Partner"}},
		Users: []domain.User{
			{ID: staff, Email: "ops@demo.example", Permissions: []domain.Permission{domain.PermAll}},
			{ID: partnerUser, PartnerID: &partnerB, Email: "agent@other.example", Permissions: []domain.Permission{domain.PermReadSAMActionLogs}},
		},
		APIKeys: []domain.APIKey{
			{ID: demoID(111), UserID: staff, Key: demoAPIKey},
			{ID: demoID(112), UserID: partnerUser, Key: demoPartnerAPIKey},
		},
		Sessions:  []domain.Session{{ID: demoID(121), UserID: staff, Token: demoSessionToken, ExpiresAt: now.AddDate(1, 0, 0)}},
		CardPlans: plans,
		Leads: []domain.Lead{
			{ID: demoLead, PartnerID: partnerA, BusinessName: "Demo Coffee LLC", MidID: ptr(demoID(3001)),
				ServiceAcceptance: &domain.StoredAcceptance{Configured: true, SelectedCardPlanIDs: []domain.ID{plans[0].ID, plans[1].ID, plans[3].ID},
					AmexProgram: ptr("opt_blue"), EBTBenefitMode: ptr("both"), EBTFcsNumber: ptr("1234567")}},
			{ID: demoID(302), PartnerID: partnerA, BusinessName: "Unconfigured Bakery"},
		},
		Principals: []domain.Principal{
			{ID: demoPrincipal, LeadID: demoLead, FirstName: "Dana", LastName: "Demo", SSN: ptr("123-45-6789")},
			{ID: demoID(402), LeadID: demoLead, FirstName: "Noel", LastName: "Nossn"},
		},
		Merchants: []domain.Merchant{{ID: demoMerchant, PartnerID: partnerA, LeadID: &demoLead, Name: "Demo Coffee"}},
		MerchantDocuments: []domain.MerchantDocument{
			{ID: demoDocument, MerchantID: demoMerchant, FileName: "voided-check.pdf", ContentType: "application/pdf", ContentBase64: []byte("%PDF-1.4 demo")},
			{ID: demoID(602), MerchantID: demoMerchant, FileName: "lease.pdf", ContentType: "application/pdf", ContentBase64: []byte("%PDF-1.4 demo lease")},
		},
		PricingModels:    []domain.PricingModel{{ID: demoID(551), MerchantID: demoMerchant, Active: true, Type: "cash_discount", AdjustmentPercent: ptr("3.990")}},
		DeploymentModels: []domain.DeploymentModel{{ID: model, Name: "Demo Smart Terminal", EquipmentType: "terminal", Workflow: "gateway"}},
		DeploymentOrders: []domain.DeploymentOrder{{ID: demoOrder, MerchantID: demoMerchant}},
		InventoryUnits: []domain.InventoryUnit{{ID: unit, DeploymentModelID: model, SerialNumber: "SN-DEMO-0001", Condition: "new",
			Status: "assigned", ReceivedDate: now.AddDate(0, 0, -10), Stamps: stamps}},
		Varsheets: []domain.Varsheet{{ID: varsheet, EntityID: demoLead, EntityType: "lead", MidID: demoID(3001), VNumber: "V1234567",
			TerminalIDNumber: ptr("7000001"), MerchantNumber: ptr("4445550001"), CurrencyCode: ptr("840"), TimeZoneCode: ptr("708"),
			PinDebit: ptr(true), EBTFoodStamps: ptr(true), EBTCash: ptr(false), Stamps: stamps}},
		Equipment: []domain.Equipment{
			{ID: equipment, EntityID: demoLead, EntityType: "lead", DeploymentModelID: model, InventoryUnitID: &unit,
				VendorTerminalID: ptr(demoTerminalID), VarsheetID: &varsheet, Status: "active", DeployedDate: ptr(now.AddDate(0, 0, -2)), Stamps: stamps},
			{ID: bareEquipment, EntityID: demoLead, EntityType: "lead", DeploymentModelID: model,
				VendorTerminalID: ptr("TID/DEMO 0002"), VarsheetID: &varsheet, Status: "active", Stamps: stamps},
		},
		LineItems: []domain.LineItem{
			{ID: demoLineItem, OrderID: demoOrder, OrderType: "gateway", DeploymentModelID: model,
				ConnectionType: []string{"ip", "wifi"}, Status: "deployed", InventoryUnitID: &unit, EquipmentID: &equipment, VarsheetID: &varsheet, Stamps: stamps},
			{ID: demoBareLineItem, OrderID: demoOrder, OrderType: "gateway", DeploymentModelID: model,
				Status: "deployed", EquipmentID: &bareEquipment, VarsheetID: &varsheet, Stamps: stamps},
		},
		Shipments: []dataset.Shipment{{LineItemID: demoLineItem, Shipment: domain.Shipment{ID: demoID(1301), Status: "delivered",
			CarrierCode: ptr("ups"), TrackingNumber: ptr("1Z999AA10123456784"), ShippedDate: ptr(now.AddDate(0, 0, -5))}}},
		FileBuilds: []domain.FileBuild{
			{ID: demoID(1401), LineItemID: demoLineItem, Settings: settings},
			{ID: demoID(1402), LineItemID: demoBareLineItem, Settings: settings},
		},
	}
	actions := []string{"add_equipment_purchase", "add_equipment_purchase_fail", "update_mid", "board_merchant"}
	for i := range 45 {
		ds.SAMActionLogs = append(ds.SAMActionLogs, domain.SAMActionLog{ID: demoID(5000 + i), EntityID: demoLead,
			Action: actions[i%len(actions)], ActionDate: now.Add(-time.Duration(i) * time.Hour).Truncate(time.Second), SamID: int64(9000 + i)})
	}
	return ds
}

// printCurls prints a ready-to-paste line for each operation and the audit list.
func (d *demoSetup) printCurls(w io.Writer, base string) {
	auth := fmt.Sprintf("-H 'Authorization: Api-Key %s'", demoAPIKey)
	fmt.Fprintf(w, `
backoffice demo is running at %[1]s (DEMO MODE: development master key and demo credentials; not for production)

# List a lead's SAM action logs, 5 per page
curl -s %[2]s '%[1]s/v1/crm/sam-action-logs/%[3]s?page=1&size=5'

# Get the lead's service acceptance
curl -s %[2]s '%[1]s/v1/crm/leads/%[3]s/service-acceptance'

# Decrypt a principal's SSN (audited)
curl -s %[2]s '%[1]s/v1/crm/leads/%[3]s/principals/%[4]s/decrypt/ssn'

# Push a terminal's device parameters to its gateway
curl -s -X POST %[2]s '%[1]s/v1/crm/deployment-orders/%[5]s/line-items/%[6]s/device-parameters'

# The same for a line item with no inventory unit and no shipment: both answered null
curl -s -X POST %[2]s '%[1]s/v1/crm/deployment-orders/%[5]s/line-items/%[11]s/device-parameters'

# Delete a merchant document (204 the first time, 404 after)
curl -s -i -X DELETE %[2]s '%[1]s/v1/crm/merchants/%[7]s/documents/%[8]s'

# The audit trail, newest first: the decrypt and the deletion above are in it (staff only)
curl -s %[2]s '%[1]s/v1/audit-events?size=5'

# The same with a session token, and as another partner's user (404: not theirs)
curl -s -H 'Authorization: Bearer %[9]s' '%[1]s/v1/crm/leads/%[3]s/service-acceptance'
curl -s -H 'Authorization: Api-Key %[10]s' '%[1]s/v1/crm/sam-action-logs/%[3]s'
`, base, auth, demoLead, demoPrincipal, demoOrder, demoLineItem, demoMerchant, demoDocument, demoSessionToken, demoPartnerAPIKey, demoBareLineItem)
	if d.gatewayURL != "" {
		fmt.Fprintf(w, "\n# What the in-process gateway simulator received for the terminal\ncurl -s '%s/v1/terminals/%s/parameters'\n",
			d.gatewayURL, strings.ReplaceAll(strings.ReplaceAll(demoTerminalID, "/", "%2F"), " ", "%20"))
	}
	dir, _ := filepath.Abs(demoDir)
	fmt.Fprintf(w, `
# Commands beside this demo take --demo: its database and development master key,
# %[1]s and %[2]s
# (run them from this directory; build the binary with: go build -o backoffice ./cmd/backoffice)
./backoffice apikey list --demo
./backoffice keys status --demo

# Next, your own data, key and users: README.md, "From the demo to your own data"
`, filepath.Join(dir, filepath.Base(demoDatabasePath)), filepath.Join(dir, filepath.Base(demoKeyPath)))
	fmt.Fprintln(w)
}

// DemoDataset is the demo's dataset, for end-to-end tests and examples.
func DemoDataset(now time.Time) *dataset.Dataset { return demoDataset(now) }

// DemoAPIKey is the demo staff user's API key (all permissions).
const DemoAPIKey = demoAPIKey
