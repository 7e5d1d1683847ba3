package dataset

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"backoffice/internal/auditlog"
	"backoffice/internal/column"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
	"backoffice/internal/store"
)

// kinds lists every kind of record the file holds, once, in the order of the file's keys: its
// key, where its records are in a Dataset, the rules its records keep, its table with the row
// mapping, and its references. The file's keys, its checks, the import's order, the reference and
// duplicate checks and the export all come from here, so adding a kind is an entry here (with its
// rules in check.go), its type (a field of Dataset) and its migrations.
func kinds() []kind {
	return []kind{
		spec[domain.Partner]{
			key: "partners", table: "partners", what: "partner",
			records: func(ds *Dataset) *[]domain.Partner { return &ds.Partners },
			id:      func(r *domain.Partner) *domain.ID { return &r.ID },
			check:   (*checker).partner,
			columns: "id, name",
			args:    func(r *domain.Partner) []any { return []any{r.ID, r.Name} },
			scan: func(sc store.Scanner) (r domain.Partner, err error) {
				return r, sc.Scan(&r.ID, &r.Name)
			},
		}.kind(),
		spec[domain.User]{
			key: "users", table: "users", what: "user",
			records: func(ds *Dataset) *[]domain.User { return &ds.Users },
			id:      func(r *domain.User) *domain.ID { return &r.ID },
			check:   (*checker).user,
			refs:    []ref[domain.User]{{"partnerId", func(r *domain.User) *domain.ID { return r.PartnerID }, []string{"partners"}}},
			unique: []unique[domain.User]{{"externalId", "external_id", func(r *domain.User) any {
				if r.ExternalID == nil {
					return nil
				}
				return *r.ExternalID
			}, "two users may not have the same external id"}},
			columns: store.UserColumns,
			args:    store.UserArgs,
			scan:    store.ScanUser,
		}.kind(),
		// Credentials go in as hashes and never come out: no scan.
		spec[domain.APIKey]{
			key: "apiKeys", table: "api_keys", what: "API key",
			records: func(ds *Dataset) *[]domain.APIKey { return &ds.APIKeys },
			id:      func(r *domain.APIKey) *domain.ID { return &r.ID },
			check:   (*checker).apiKey,
			refs:    []ref[domain.APIKey]{{"userId", func(r *domain.APIKey) *domain.ID { return &r.UserID }, []string{"users"}}},
			unique: []unique[domain.APIKey]{{"key", "key_hash", func(r *domain.APIKey) any {
				return secrets.HashCredential(domain.CredentialAPIKey, r.Key)
			}, "two API keys may not have the same key"}},
			// secret_bits keeps the secret's strength, which its hash cannot tell: serve refuses weak ones.
			columns: "id, user_id, key_hash, expires_at, secret_bits",
			args: func(r *domain.APIKey) []any {
				return []any{r.ID, r.UserID, secrets.HashCredential(domain.CredentialAPIKey, r.Key), column.NullMicros(r.ExpiresAt),
					secrets.CredentialBits(r.Key)}
			},
		}.kind(),
		spec[domain.Session]{
			key: "sessions", table: "sessions", what: "session",
			records: func(ds *Dataset) *[]domain.Session { return &ds.Sessions },
			id:      func(r *domain.Session) *domain.ID { return &r.ID },
			check:   (*checker).session,
			refs:    []ref[domain.Session]{{"userId", func(r *domain.Session) *domain.ID { return &r.UserID }, []string{"users"}}},
			unique: []unique[domain.Session]{{"token", "token_hash", func(r *domain.Session) any {
				return secrets.HashCredential(domain.CredentialSession, r.Token)
			}, "two sessions may not have the same token"}},
			columns: "id, user_id, token_hash, expires_at, secret_bits",
			args: func(r *domain.Session) []any {
				return []any{r.ID, r.UserID, secrets.HashCredential(domain.CredentialSession, r.Token), column.Micros(r.ExpiresAt),
					secrets.CredentialBits(r.Token)}
			},
		}.kind(),
		spec[domain.CardPlan]{
			key: "cardPlans", table: "card_plans", what: "card plan",
			records: func(ds *Dataset) *[]domain.CardPlan { return &ds.CardPlans },
			id:      func(r *domain.CardPlan) *domain.ID { return &r.ID },
			check:   (*checker).cardPlan,
			columns: "id, code, display_name, sort_order",
			args:    func(r *domain.CardPlan) []any { return []any{r.ID, r.Code, r.DisplayName, r.SortOrder} },
			scan: func(sc store.Scanner) (r domain.CardPlan, err error) {
				return r, sc.Scan(&r.ID, &r.Code, &r.DisplayName, &r.SortOrder)
			},
		}.kind(),
		spec[domain.Lead]{
			key: "leads", table: "leads", what: "lead",
			records: func(ds *Dataset) *[]domain.Lead { return &ds.Leads },
			id:      func(r *domain.Lead) *domain.ID { return &r.ID },
			check:   (*checker).lead,
			refs:    []ref[domain.Lead]{{"partnerId", func(r *domain.Lead) *domain.ID { return &r.PartnerID }, []string{"partners"}}},
			// A stored acceptance's selected card plans are rows of lead_card_plans.
			after: importLeadCardPlans,
			read:  exportLeads,
			parts: []part{{table: "lead_card_plans", owner: "lead_id",
				field: "serviceAcceptance.selectedCardPlanIds", column: "card_plan_id", to: "cardPlans"}},
			columns: leadColumns,
			args:    leadArgs,
		}.kind(),
		spec[domain.Principal]{
			key: "principals", table: "principals", what: "principal",
			records: func(ds *Dataset) *[]domain.Principal { return &ds.Principals },
			id:      func(r *domain.Principal) *domain.ID { return &r.ID },
			check:   (*checker).principal,
			refs:    []ref[domain.Principal]{{"leadId", func(r *domain.Principal) *domain.ID { return &r.LeadID }, []string{"leads"}}},
			// The SSN is sealed on import and opened on export only with a ring.
			columns: "id, lead_id, first_name, last_name, ssn_key_id, ssn_sealed",
			row:     principalRow,
			read:    exportPrincipals,
			sealed:  true,
		}.kind(),
		spec[domain.Merchant]{
			key: "merchants", table: "merchants", what: "merchant",
			records: func(ds *Dataset) *[]domain.Merchant { return &ds.Merchants },
			id:      func(r *domain.Merchant) *domain.ID { return &r.ID },
			check:   (*checker).merchant,
			refs: []ref[domain.Merchant]{
				{"partnerId", func(r *domain.Merchant) *domain.ID { return &r.PartnerID }, []string{"partners"}},
				{"leadId", func(r *domain.Merchant) *domain.ID { return r.LeadID }, []string{"leads"}},
			},
			columns: "id, partner_id, lead_id, name",
			args: func(r *domain.Merchant) []any {
				return []any{r.ID, r.PartnerID, column.NullID(r.LeadID), r.Name}
			},
			scan: func(sc store.Scanner) (r domain.Merchant, err error) {
				var lead sql.NullString
				err = sc.Scan(&r.ID, &r.PartnerID, &lead, &r.Name)
				r.LeadID = column.IDPtr(lead)
				return r, err
			},
		}.kind(),
		spec[domain.MerchantDocument]{
			key: "merchantDocuments", table: "merchant_documents", what: "merchant document",
			records: func(ds *Dataset) *[]domain.MerchantDocument { return &ds.MerchantDocuments },
			id:      func(r *domain.MerchantDocument) *domain.ID { return &r.ID },
			check:   (*checker).merchantDocument,
			refs: []ref[domain.MerchantDocument]{
				{"merchantId", func(r *domain.MerchantDocument) *domain.ID { return &r.MerchantID }, []string{"merchants"}},
			},
			columns: "id, merchant_id, file_name, content_type, content",
			sealed:  true,
			args: func(r *domain.MerchantDocument) []any {
				content := r.ContentBase64
				if content == nil {
					content = []byte{}
				}
				return []any{r.ID, r.MerchantID, r.FileName, r.ContentType, content}
			},
			scan: func(sc store.Scanner) (r domain.MerchantDocument, err error) {
				return r, sc.Scan(&r.ID, &r.MerchantID, &r.FileName, &r.ContentType, &r.ContentBase64)
			},
		}.kind(),
		spec[domain.PricingModel]{
			key: "pricingModels", table: "pricing_models", what: "pricing model",
			records:  func(ds *Dataset) *[]domain.PricingModel { return &ds.PricingModels },
			id:       func(r *domain.PricingModel) *domain.ID { return &r.ID },
			checkAll: (*checker).pricingModels,
			refs: []ref[domain.PricingModel]{
				{"merchantId", func(r *domain.PricingModel) *domain.ID { return &r.MerchantID }, []string{"merchants"}},
			},
			columns: "id, merchant_id, active, type, adjustment_percent",
			row:     pricingModelRow,
			after:   activatePricingModels,
			scan: func(sc store.Scanner) (r domain.PricingModel, err error) {
				var adj sql.NullString
				err = sc.Scan(&r.ID, &r.MerchantID, &r.Active, &r.Type, &adj)
				r.AdjustmentPercent = column.StrPtr(adj)
				return r, err
			},
		}.kind(),
		spec[domain.DeploymentModel]{
			key: "deploymentModels", table: "deployment_models", what: "deployment model",
			records: func(ds *Dataset) *[]domain.DeploymentModel { return &ds.DeploymentModels },
			id:      func(r *domain.DeploymentModel) *domain.ID { return &r.ID },
			check:   (*checker).deploymentModel,
			columns: "id, name, equipment_type, workflow",
			args: func(r *domain.DeploymentModel) []any {
				return []any{r.ID, r.Name, r.EquipmentType, r.Workflow}
			},
			scan: func(sc store.Scanner) (r domain.DeploymentModel, err error) {
				return r, sc.Scan(&r.ID, &r.Name, &r.EquipmentType, &r.Workflow)
			},
		}.kind(),
		spec[domain.DeploymentOrder]{
			key: "deploymentOrders", table: "deployment_orders", what: "deployment order",
			records: func(ds *Dataset) *[]domain.DeploymentOrder { return &ds.DeploymentOrders },
			id:      func(r *domain.DeploymentOrder) *domain.ID { return &r.ID },
			check:   (*checker).deploymentOrder,
			refs: []ref[domain.DeploymentOrder]{
				{"merchantId", func(r *domain.DeploymentOrder) *domain.ID { return &r.MerchantID }, []string{"merchants"}},
			},
			columns: "id, merchant_id",
			args:    func(r *domain.DeploymentOrder) []any { return []any{r.ID, r.MerchantID} },
			scan: func(sc store.Scanner) (r domain.DeploymentOrder, err error) {
				return r, sc.Scan(&r.ID, &r.MerchantID)
			},
		}.kind(),
		spec[domain.InventoryUnit]{
			key: "inventoryUnits", table: "inventory_units", what: "inventory unit",
			records: func(ds *Dataset) *[]domain.InventoryUnit { return &ds.InventoryUnits },
			id:      func(r *domain.InventoryUnit) *domain.ID { return &r.ID },
			check:   (*checker).inventoryUnit,
			refs: []ref[domain.InventoryUnit]{
				{"deploymentModelId", func(r *domain.InventoryUnit) *domain.ID { return &r.DeploymentModelID }, []string{"deploymentModels"}},
			},
			columns: store.InventoryUnitColumns,
			args:    store.InventoryUnitArgs,
			scan:    store.ScanInventoryUnit,
		}.kind(),
		spec[domain.Equipment]{
			key: "equipment", table: "equipment", what: "equipment",
			records: func(ds *Dataset) *[]domain.Equipment { return &ds.Equipment },
			id:      func(r *domain.Equipment) *domain.ID { return &r.ID },
			check:   (*checker).equipment,
			refs: []ref[domain.Equipment]{
				{"deploymentModelId", func(r *domain.Equipment) *domain.ID { return &r.DeploymentModelID }, []string{"deploymentModels"}},
				{"inventoryUnitId", func(r *domain.Equipment) *domain.ID { return r.InventoryUnitID }, []string{"inventoryUnits"}},
				{"varsheetId", func(r *domain.Equipment) *domain.ID { return r.VarsheetID }, []string{"varsheets"}},
			},
			columns: store.EquipmentColumns,
			args:    store.EquipmentArgs,
			scan:    store.ScanEquipment,
		}.kind(),
		spec[domain.Varsheet]{
			key: "varsheets", table: "varsheets", what: "VAR sheet",
			records: func(ds *Dataset) *[]domain.Varsheet { return &ds.Varsheets },
			id:      func(r *domain.Varsheet) *domain.ID { return &r.ID },
			check:   (*checker).varsheet,
			columns: store.VarsheetColumns,
			args:    store.VarsheetArgs,
			scan:    store.ScanVarsheet,
		}.kind(),
		spec[domain.LineItem]{
			key: "lineItems", table: "line_items", what: "line item",
			records: func(ds *Dataset) *[]domain.LineItem { return &ds.LineItems },
			id:      func(r *domain.LineItem) *domain.ID { return &r.ID },
			check:   (*checker).lineItem,
			refs: []ref[domain.LineItem]{
				{"orderId", func(r *domain.LineItem) *domain.ID { return &r.OrderID }, []string{"deploymentOrders"}},
				{"deploymentModelId", func(r *domain.LineItem) *domain.ID { return &r.DeploymentModelID }, []string{"deploymentModels"}},
				{"inventoryUnitId", func(r *domain.LineItem) *domain.ID { return r.InventoryUnitID }, []string{"inventoryUnits"}},
				{"equipmentId", func(r *domain.LineItem) *domain.ID { return r.EquipmentID }, []string{"equipment"}},
				{"varsheetId", func(r *domain.LineItem) *domain.ID { return r.VarsheetID }, []string{"varsheets"}},
			},
			columns: store.LineItemColumns,
			args:    store.LineItemArgs,
			scan:    store.ScanLineItem,
		}.kind(),
		spec[Shipment]{
			key: "shipments", table: "shipments", what: "shipment",
			records: func(ds *Dataset) *[]Shipment { return &ds.Shipments },
			id:      func(r *Shipment) *domain.ID { return &r.ID },
			check:   (*checker).shipment,
			refs:    []ref[Shipment]{{"lineItemId", func(r *Shipment) *domain.ID { return &r.LineItemID }, []string{"lineItems"}}},
			unique:  []unique[Shipment]{{"lineItemId", "line_item_id", func(r *Shipment) any { return r.LineItemID }, "a line item has one shipment at most"}},
			columns: store.ShipmentColumns + ", line_item_id",
			args:    func(r *Shipment) []any { return append(store.ShipmentArgs(&r.Shipment), r.LineItemID) },
			scan: func(sc store.Scanner) (r Shipment, err error) {
				r.Shipment, err = store.ScanShipment(sc, &r.LineItemID)
				return r, err
			},
		}.kind(),
		spec[domain.FileBuild]{
			key: "fileBuilds", table: "file_builds", what: "file build",
			records: func(ds *Dataset) *[]domain.FileBuild { return &ds.FileBuilds },
			id:      func(r *domain.FileBuild) *domain.ID { return &r.ID },
			check:   (*checker).fileBuild,
			refs:    []ref[domain.FileBuild]{{"lineItemId", func(r *domain.FileBuild) *domain.ID { return &r.LineItemID }, []string{"lineItems"}}},
			unique:  []unique[domain.FileBuild]{{"lineItemId", "line_item_id", func(r *domain.FileBuild) any { return r.LineItemID }, "a line item has one file build at most"}},
			columns: "id, line_item_id, settings",
			args:    func(r *domain.FileBuild) []any { return []any{r.ID, r.LineItemID, string(r.Settings)} },
			scan: func(sc store.Scanner) (r domain.FileBuild, err error) {
				var settings string
				err = sc.Scan(&r.ID, &r.LineItemID, &settings)
				r.Settings = json.RawMessage(settings)
				return r, err
			},
		}.kind(),
		// SAM action logs come by the million, are kept in positions and under 16-byte ids: the
		// store moves them (Bulk.AddSAMLogs, Snapshot.SAMActionLogs).
		spec[domain.SAMActionLog]{
			key: "samActionLogs", table: "sam_action_logs", what: "SAM action log",
			records:  func(ds *Dataset) *[]domain.SAMActionLog { return &ds.SAMActionLogs },
			id:       func(r *domain.SAMActionLog) *domain.ID { return &r.ID },
			checkAll: (*checker).samActionLogs,
			refs: []ref[domain.SAMActionLog]{{"entityId", func(r *domain.SAMActionLog) *domain.ID { return &r.EntityID },
				[]string{"leads", "merchants", "deploymentOrders", "lineItems", "equipment"}}},
			write: importSAMLogs,
			read:  func(x *exporter) ([]domain.SAMActionLog, error) { return x.sn.SAMActionLogs() },
		}.kind(),
		spec[domain.MerchantNote]{
			key: "merchantNotes", table: "merchant_notes", what: "merchant note",
			records: func(ds *Dataset) *[]domain.MerchantNote { return &ds.MerchantNotes },
			id:      func(r *domain.MerchantNote) *domain.ID { return &r.ID },
			check:   (*checker).merchantNote,
			refs: []ref[domain.MerchantNote]{
				{"merchantId", func(r *domain.MerchantNote) *domain.ID { return &r.MerchantID }, []string{"merchants"}},
			},
			columns: store.MerchantNoteColumns,
			order:   "created_at, id",
			// Written by the service: an import adds them, never replaces or deletes one.
			serviceWritten: true,
			args:           store.MerchantNoteArgs,
			scan:           store.ScanMerchantNote,
		}.kind(),
		// Audit events carry their place in the audit chain (seq, chainKeyId, hash): an export's are
		// imported as they are, links and all, so that the copy verifies; see importAuditEvents.
		spec[domain.AuditEvent]{
			key: "auditEvents", table: "audit_events", what: "audit event",
			records: func(ds *Dataset) *[]domain.AuditEvent { return &ds.AuditEvents },
			id:      func(r *domain.AuditEvent) *domain.ID { return &r.ID },
			check:   (*checker).auditEvent,
			columns: auditlog.Columns,
			order:   "seq",
			write:   importAuditEvents,
			scan:    auditlog.ScanEvent,
			// Written by the service: an import adds them, never replaces or deletes one.
			serviceWritten: true,
		}.kind(),
	}
}

const leadColumns = "id, partner_id, business_name, mid_id, sa_configured, sa_ebt_fcs_number, sa_amex_program, sa_amex_esa_number, sa_ebt_benefit_mode"

func leadArgs(r *domain.Lead) []any {
	var configured sql.NullBool
	var fcs, amex, esa, ebt *string
	if sa := r.ServiceAcceptance; sa != nil {
		configured = sql.NullBool{Bool: sa.Configured, Valid: true}
		fcs, amex, esa, ebt = sa.EBTFcsNumber, sa.AmexProgram, sa.AmexEsaNumber, sa.EBTBenefitMode
	}
	return []any{r.ID, r.PartnerID, r.BusinessName, column.NullID(r.MidID), configured,
		column.NullString(fcs), column.NullString(amex), column.NullString(esa), column.NullString(ebt)}
}

// importLeadCardPlans stores each lead's selected card plans, once every lead is in.
func importLeadCardPlans(im *importer, leads []domain.Lead) error {
	ins := im.b.Batcher("lead_card_plans", "lead_id, card_plan_id")
	defer ins.Close()
	for i := range leads {
		r := &leads[i]
		if r.ServiceAcceptance == nil {
			continue
		}
		for j, plan := range r.ServiceAcceptance.SelectedCardPlanIDs {
			path := fmt.Sprintf("%s.serviceAcceptance.selectedCardPlanIds[%d]", at("leads", i), j)
			if err := im.ref(path, []string{"cardPlans"}, plan); err != nil {
				return err
			}
			if err := ins.Add(nil, r.ID, plan); err != nil {
				return err
			}
		}
	}
	return ins.Flush()
}

func exportLeads(x *exporter) ([]domain.Lead, error) {
	selected := map[domain.ID][]domain.ID{}
	err := x.sn.ReadAll("lead_card_plans", "lead_id, card_plan_id", "lead_id, card_plan_id", func(sc store.Scanner) error {
		var lead, plan domain.ID
		err := sc.Scan(&lead, &plan)
		selected[lead] = append(selected[lead], plan)
		return err
	})
	if err != nil {
		return nil, err
	}
	return readTable(x, "leads", leadColumns, "id", func(sc store.Scanner) (l domain.Lead, err error) {
		var mid, fcs, amex, esa, ebt sql.NullString
		var configured sql.NullBool
		err = sc.Scan(&l.ID, &l.PartnerID, &l.BusinessName, &mid, &configured, &fcs, &amex, &esa, &ebt)
		l.MidID = column.IDPtr(mid)
		if configured.Valid {
			plans := selected[l.ID]
			if plans == nil {
				plans = []domain.ID{}
			}
			l.ServiceAcceptance = &domain.StoredAcceptance{Configured: configured.Bool, SelectedCardPlanIDs: plans,
				EBTFcsNumber: column.StrPtr(fcs), AmexProgram: column.StrPtr(amex), AmexEsaNumber: column.StrPtr(esa),
				EBTBenefitMode: column.StrPtr(ebt)}
		}
		return l, err
	})
}

// principalRow seals the SSN by the SSN rule (secrets.SealSSN).
func principalRow(im *importer, path string, r *domain.Principal) ([]any, error) {
	var keyID sql.NullString
	var sealed []byte
	if r.SSN != nil {
		if im.ring == nil {
			return nil, Errorf(path+".ssn", "importing an SSN needs the master key")
		}
		id, ct := secrets.SealSSN(im.ring, r.ID, *r.SSN)
		keyID, sealed = sql.NullString{String: id, Valid: true}, ct
	}
	return []any{r.ID, r.LeadID, r.FirstName, r.LastName, keyID, sealed}, nil
}

// exportPrincipals opens SSNs only when a ring is given (the --include-secrets export).
func exportPrincipals(x *exporter) ([]domain.Principal, error) {
	return readTable(x, "principals", "id, lead_id, first_name, last_name, ssn_key_id, ssn_sealed", "id", func(sc store.Scanner) (p domain.Principal, err error) {
		var keyID sql.NullString
		var sealed []byte
		if err = sc.Scan(&p.ID, &p.LeadID, &p.FirstName, &p.LastName, &keyID, &sealed); err != nil {
			return p, err
		}
		if x.ring == nil || !keyID.Valid {
			return p, nil
		}
		ssn, err := secrets.OpenSSN(x.ring, p.ID, keyID.String, sealed)
		if err != nil {
			return p, fmt.Errorf("principal %s: %w", p.ID, err)
		}
		plain := ssn.Reveal()
		p.SSN = &plain
		return p, nil
	})
}

// pricingModelRow writes every pricing model inactive at first, and keeps no adjustment for a
// standard model; activatePricingModels then activates the file's active ones. So the rule of one
// active model per merchant is held against the result of the whole file, replaced models
// included, in whatever order it lists them (the database's partial unique index would refuse a
// second active model even for a moment).
func pricingModelRow(im *importer, path string, r *domain.PricingModel) ([]any, error) {
	adj := r.AdjustmentPercent
	if r.Type == "standard" {
		adj = nil
	}
	return []any{r.ID, r.MerchantID, false, r.Type, column.NullString(adj)}, nil
}

// activatePricingModels activates the file's active models, refusing one whose merchant keeps
// another active one.
func activatePricingModels(im *importer, models []domain.PricingModel) error {
	for i := range models {
		r := &models[i]
		if !r.Active {
			continue
		}
		active, ok, err := im.b.ActivePricingModel(r.MerchantID)
		if err != nil {
			return err
		}
		if ok && active != r.ID {
			return Errorf(at("pricingModels", i)+".active", "merchant %s already has an active pricing model", r.MerchantID)
		}
		if err := im.b.ActivatePricingModel(r.ID); err != nil {
			return err
		}
	}
	return nil
}
