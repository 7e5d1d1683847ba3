package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// ImportStats counts what an import added.
type ImportStats struct {
	Records int
}

// Import adds every record of ds in one transaction: all of it, or nothing. References may point
// to records in the file or already in the database; an id that exists already is a duplicate.
// Problems come back as *dataset.Error naming the record and field.
func (s *Store) Import(ctx context.Context, ds *dataset.Dataset, ring *secrets.Ring) (ImportStats, error) {
	var stats ImportStats
	err := s.tx(ctx, func(q querier) error {
		end, err := s.engine.BeginImport(ctx, q.x.(*sql.Tx))
		if err != nil {
			return fmt.Errorf("store: import: %w", s.classify(err))
		}
		defer end()
		im := &importer{ctx: ctx, q: q, ds: ds, ring: ring, inFile: fileIDs(ds), known: map[string]map[domain.ID]bool{},
			samPlan: planSAMLogs(ds.SAMActionLogs)}
		for _, step := range im.steps() {
			if err := step(); err != nil {
				return err
			}
		}
		stats.Records = im.count
		return renumberSAMLogs(ctx, q, im.renumber)
	})
	if errors.Is(err, errSAMTaken) {
		return ImportStats{}, s.samTaken(ctx, ds.SAMActionLogs)
	}
	if err != nil {
		return ImportStats{}, err
	}
	return stats, nil
}

type importer struct {
	ctx    context.Context
	q      querier
	ds     *dataset.Dataset
	ring   *secrets.Ring
	inFile map[string]map[domain.ID]bool
	known  map[string]map[domain.ID]bool
	// samPlan delivers the SAM logs' plan, made on the other core while the records before them
	// go in.
	samPlan <-chan *samPlan
	// renumber holds the entities whose SAM action logs need their positions recomputed, each
	// with how many logs this import adds to it.
	renumber map[domain.ID]int
	count    int
}

// fileIDs indexes the ids of each table the file adds, so references can point forward.
func fileIDs(ds *dataset.Dataset) map[string]map[domain.ID]bool {
	m := map[string]map[domain.ID]bool{}
	add := func(table string, id domain.ID) {
		if m[table] == nil {
			m[table] = map[domain.ID]bool{}
		}
		m[table][id] = true
	}
	for _, r := range ds.Partners {
		add("partners", r.ID)
	}
	for _, r := range ds.Users {
		add("users", r.ID)
	}
	for _, r := range ds.CardPlans {
		add("card_plans", r.ID)
	}
	for _, r := range ds.Leads {
		add("leads", r.ID)
	}
	for _, r := range ds.Merchants {
		add("merchants", r.ID)
	}
	for _, r := range ds.DeploymentModels {
		add("deployment_models", r.ID)
	}
	for _, r := range ds.DeploymentOrders {
		add("deployment_orders", r.ID)
	}
	for _, r := range ds.InventoryUnits {
		add("inventory_units", r.ID)
	}
	for _, r := range ds.Equipment {
		add("equipment", r.ID)
	}
	for _, r := range ds.Varsheets {
		add("varsheets", r.ID)
	}
	for _, r := range ds.LineItems {
		add("line_items", r.ID)
	}
	return m
}

// ref checks that id names a row of table, in the file or in the database.
func (im *importer) ref(path, table, what string, id domain.ID) error {
	if im.inFile[table][id] || im.known[table][id] {
		return nil
	}
	ok, err := im.exists(table, id)
	if err != nil {
		return err
	}
	if !ok {
		return dataset.Errorf(path, "no %s with this id", what)
	}
	return nil
}

func (im *importer) optRef(path, table, what string, id *domain.ID) error {
	if id == nil {
		return nil
	}
	return im.ref(path, table, what, *id)
}

func (im *importer) exists(table string, id domain.ID) (bool, error) {
	var n int
	// table is one of this file's constants, never input.
	err := im.q.row(im.ctx, `SELECT count(*) FROM `+table+` WHERE id = ?`, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: import: %w", err)
	}
	if n > 0 {
		if im.known[table] == nil {
			im.known[table] = map[domain.ID]bool{}
		}
		im.known[table][id] = true
	}
	return n > 0, nil
}

// insert runs one prepared insert and names the record when it collides with existing data.
// The insert skips a conflicting row (see each) rather than failing on it, because a failed
// statement aborts a PostgreSQL transaction: the query that tells a duplicate id from another
// conflict could not run after it.
func (im *importer) insert(stmt *sql.Stmt, path, table string, id domain.ID, args ...any) error {
	res, err := stmt.ExecContext(im.ctx, args...)
	if err != nil {
		return fmt.Errorf("store: import %s: %w", path, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: import %s: %w", path, err)
	}
	if n == 0 {
		return im.conflict(path, table, id)
	}
	im.count++
	return nil
}

// conflict names why a record's row was refused by a unique constraint.
func (im *importer) conflict(path, table string, id domain.ID) error {
	dup, err := im.exists(table, id)
	if err != nil {
		return err
	}
	if dup {
		return dataset.Errorf(path+".id", "duplicate id %s: already in the database", id)
	}
	return dataset.Errorf(path, "conflicts with a record already in the database or the file")
}

// each prepares one insert, which skips rows that conflict with a unique constraint, and runs it
// for n records.
func (im *importer) each(query string, n int, row func(i int, stmt *sql.Stmt) error) error {
	if n == 0 {
		return nil
	}
	stmt, err := im.q.prepare(im.ctx, query+` ON CONFLICT DO NOTHING`)
	if err != nil {
		return fmt.Errorf("store: import: prepare: %w", err)
	}
	defer stmt.Close()
	for i := 0; i < n; i++ {
		if err := row(i, stmt); err != nil {
			return err
		}
	}
	return nil
}

func at(section string, i int) string { return fmt.Sprintf("%s[%d]", section, i) }

// steps lists the inserts in an order in which every reference points to a table already filled.
func (im *importer) steps() []func() error {
	ds := im.ds
	return []func() error{
		func() error {
			return im.each(`INSERT INTO partners (id, name) VALUES (?, ?)`, len(ds.Partners), func(i int, st *sql.Stmt) error {
				r := ds.Partners[i]
				return im.insert(st, at("partners", i), "partners", r.ID, r.ID, r.Name)
			})
		},
		func() error {
			return im.each(`INSERT INTO users (id, partner_id, email, permissions) VALUES (?, ?, ?, ?)`, len(ds.Users), func(i int, st *sql.Stmt) error {
				r := ds.Users[i]
				if err := im.optRef(at("users", i)+".partnerId", "partners", "partner", r.PartnerID); err != nil {
					return err
				}
				return im.insert(st, at("users", i), "users", r.ID, r.ID, nullID(r.PartnerID), r.Email, domain.FormatPermissions(r.Permissions))
			})
		},
		func() error {
			return im.each(`INSERT INTO api_keys (id, user_id, key_hash, expires_at) VALUES (?, ?, ?, ?)`, len(ds.APIKeys), func(i int, st *sql.Stmt) error {
				r := ds.APIKeys[i]
				if err := im.ref(at("apiKeys", i)+".userId", "users", "user", r.UserID); err != nil {
					return err
				}
				return im.insert(st, at("apiKeys", i), "api_keys", r.ID, r.ID, r.UserID, secrets.HashCredential(domain.CredentialAPIKey, r.Key), nullMicros(r.ExpiresAt))
			})
		},
		func() error {
			return im.each(`INSERT INTO sessions (id, user_id, token_hash, expires_at) VALUES (?, ?, ?, ?)`, len(ds.Sessions), func(i int, st *sql.Stmt) error {
				r := ds.Sessions[i]
				if err := im.ref(at("sessions", i)+".userId", "users", "user", r.UserID); err != nil {
					return err
				}
				return im.insert(st, at("sessions", i), "sessions", r.ID, r.ID, r.UserID, secrets.HashCredential(domain.CredentialSession, r.Token), micros(r.ExpiresAt))
			})
		},
		func() error {
			return im.each(`INSERT INTO card_plans (id, code, display_name, sort_order) VALUES (?, ?, ?, ?)`, len(ds.CardPlans), func(i int, st *sql.Stmt) error {
				r := ds.CardPlans[i]
				return im.insert(st, at("cardPlans", i), "card_plans", r.ID, r.ID, r.Code, r.DisplayName, r.SortOrder)
			})
		},
		im.leads,
		im.principals,
		func() error {
			return im.each(`INSERT INTO merchants (id, partner_id, lead_id, name) VALUES (?, ?, ?, ?)`, len(ds.Merchants), func(i int, st *sql.Stmt) error {
				r := ds.Merchants[i]
				p := at("merchants", i)
				if err := im.ref(p+".partnerId", "partners", "partner", r.PartnerID); err != nil {
					return err
				}
				if err := im.optRef(p+".leadId", "leads", "lead", r.LeadID); err != nil {
					return err
				}
				return im.insert(st, p, "merchants", r.ID, r.ID, r.PartnerID, nullID(r.LeadID), r.Name)
			})
		},
		func() error {
			return im.each(`INSERT INTO merchant_documents (id, merchant_id, file_name, content_type, content) VALUES (?, ?, ?, ?, ?)`, len(ds.MerchantDocuments), func(i int, st *sql.Stmt) error {
				r := ds.MerchantDocuments[i]
				if err := im.ref(at("merchantDocuments", i)+".merchantId", "merchants", "merchant", r.MerchantID); err != nil {
					return err
				}
				content := r.ContentBase64
				if content == nil {
					content = []byte{}
				}
				return im.insert(st, at("merchantDocuments", i), "merchant_documents", r.ID, r.ID, r.MerchantID, r.FileName, r.ContentType, content)
			})
		},
		im.pricingModels,
		func() error {
			return im.each(`INSERT INTO deployment_models (id, name, equipment_type, workflow) VALUES (?, ?, ?, ?)`, len(ds.DeploymentModels), func(i int, st *sql.Stmt) error {
				r := ds.DeploymentModels[i]
				return im.insert(st, at("deploymentModels", i), "deployment_models", r.ID, r.ID, r.Name, r.EquipmentType, r.Workflow)
			})
		},
		func() error {
			return im.each(`INSERT INTO deployment_orders (id, merchant_id) VALUES (?, ?)`, len(ds.DeploymentOrders), func(i int, st *sql.Stmt) error {
				r := ds.DeploymentOrders[i]
				if err := im.ref(at("deploymentOrders", i)+".merchantId", "merchants", "merchant", r.MerchantID); err != nil {
					return err
				}
				return im.insert(st, at("deploymentOrders", i), "deployment_orders", r.ID, r.ID, r.MerchantID)
			})
		},
		im.inventoryUnits,
		im.varsheets,
		im.equipment,
		im.lineItems,
		im.shipments,
		im.fileBuilds,
		im.samActionLogs,
		im.merchantNotes,
		im.auditEvents,
	}
}

func (im *importer) leads() error {
	ds := im.ds
	err := im.each(`INSERT INTO leads (id, partner_id, business_name, mid_id, sa_configured, sa_ebt_fcs_number, sa_amex_program, sa_amex_esa_number, sa_ebt_benefit_mode) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, len(ds.Leads), func(i int, st *sql.Stmt) error {
		r := ds.Leads[i]
		p := at("leads", i)
		if err := im.ref(p+".partnerId", "partners", "partner", r.PartnerID); err != nil {
			return err
		}
		var configured sql.NullBool
		var fcs, amex, esa, ebt *string
		if sa := r.ServiceAcceptance; sa != nil {
			configured = sql.NullBool{Bool: sa.Configured, Valid: true}
			fcs, amex, esa, ebt = sa.EBTFcsNumber, sa.AmexProgram, sa.AmexEsaNumber, sa.EBTBenefitMode
		}
		return im.insert(st, p, "leads", r.ID, r.ID, r.PartnerID, r.BusinessName, nullID(r.MidID), configured,
			nullString(fcs), nullString(amex), nullString(esa), nullString(ebt))
	})
	if err != nil {
		return err
	}
	return im.each(`INSERT INTO lead_card_plans (lead_id, card_plan_id) VALUES (?, ?)`, len(ds.Leads), func(i int, st *sql.Stmt) error {
		r := ds.Leads[i]
		if r.ServiceAcceptance == nil {
			return nil
		}
		for j, plan := range r.ServiceAcceptance.SelectedCardPlanIDs {
			if err := im.ref(fmt.Sprintf("%s.serviceAcceptance.selectedCardPlanIds[%d]", at("leads", i), j), "card_plans", "card plan", plan); err != nil {
				return err
			}
			if _, err := st.ExecContext(im.ctx, r.ID, plan); err != nil {
				return fmt.Errorf("store: import lead card plans: %w", err)
			}
		}
		return nil
	})
}

// principals seals each SSN under the active master key, bound to the principal and field.
func (im *importer) principals() error {
	ds := im.ds
	return im.each(`INSERT INTO principals (id, lead_id, first_name, last_name, ssn_key_id, ssn_sealed) VALUES (?, ?, ?, ?, ?, ?)`, len(ds.Principals), func(i int, st *sql.Stmt) error {
		r := ds.Principals[i]
		if err := im.ref(at("principals", i)+".leadId", "leads", "lead", r.LeadID); err != nil {
			return err
		}
		var keyID sql.NullString
		var sealed []byte
		if r.SSN != nil {
			if im.ring == nil {
				return dataset.Errorf(at("principals", i)+".ssn", "importing an SSN needs the master key")
			}
			id, ct := im.ring.Seal([]byte(*r.SSN), secrets.PrincipalAAD(string(r.ID), "ssn"))
			keyID, sealed = sql.NullString{String: id, Valid: true}, ct
		}
		return im.insert(st, at("principals", i), "principals", r.ID, r.ID, r.LeadID, r.FirstName, r.LastName, keyID, sealed)
	})
}

func (im *importer) pricingModels() error {
	ds := im.ds
	return im.each(`INSERT INTO pricing_models (id, merchant_id, active, type, adjustment_percent) VALUES (?, ?, ?, ?, ?)`, len(ds.PricingModels), func(i int, st *sql.Stmt) error {
		r := ds.PricingModels[i]
		p := at("pricingModels", i)
		if err := im.ref(p+".merchantId", "merchants", "merchant", r.MerchantID); err != nil {
			return err
		}
		if r.Active {
			var n int
			if err := im.q.row(im.ctx, `SELECT count(*) FROM pricing_models WHERE merchant_id = ? AND active = TRUE`, r.MerchantID).Scan(&n); err != nil {
				return fmt.Errorf("store: import: %w", err)
			}
			if n > 0 {
				return dataset.Errorf(p+".active", "merchant %s already has an active pricing model", r.MerchantID)
			}
		}
		adj := r.AdjustmentPercent
		if r.Type == "standard" {
			adj = nil
		}
		return im.insert(st, p, "pricing_models", r.ID, r.ID, r.MerchantID, r.Active, r.Type, nullString(adj))
	})
}

func (im *importer) inventoryUnits() error {
	ds := im.ds
	return im.each(`INSERT INTO inventory_units (`+inventoryUnitCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, len(ds.InventoryUnits), func(i int, st *sql.Stmt) error {
		r := ds.InventoryUnits[i]
		p := at("inventoryUnits", i)
		if err := im.ref(p+".deploymentModelId", "deployment_models", "deployment model", r.DeploymentModelID); err != nil {
			return err
		}
		return im.insert(st, p, "inventory_units", r.ID, r.ID, r.DeploymentModelID, r.SerialNumber, r.Condition, r.Status,
			micros(r.ReceivedDate), micros(r.CreatedAt), r.CreatedBy, micros(r.UpdatedAt), r.UpdatedBy)
	})
}

func (im *importer) varsheets() error {
	ds := im.ds
	return im.each(`INSERT INTO varsheets (`+varsheetCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, len(ds.Varsheets), func(i int, st *sql.Stmt) error {
		r := ds.Varsheets[i]
		return im.insert(st, at("varsheets", i), "varsheets", r.ID, varsheetArgs(&r)...)
	})
}

func (im *importer) equipment() error {
	ds := im.ds
	return im.each(`INSERT INTO equipment (`+equipmentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, len(ds.Equipment), func(i int, st *sql.Stmt) error {
		r := ds.Equipment[i]
		p := at("equipment", i)
		if err := im.ref(p+".deploymentModelId", "deployment_models", "deployment model", r.DeploymentModelID); err != nil {
			return err
		}
		if err := im.optRef(p+".inventoryUnitId", "inventory_units", "inventory unit", r.InventoryUnitID); err != nil {
			return err
		}
		if err := im.optRef(p+".varsheetId", "varsheets", "VAR sheet", r.VarsheetID); err != nil {
			return err
		}
		return im.insert(st, p, "equipment", r.ID, r.ID, r.EntityID, r.EntityType, r.DeploymentModelID, nullID(r.InventoryUnitID),
			nullString(r.VendorTerminalID), nullID(r.VarsheetID), r.Status, nullMicros(r.DeployedDate),
			micros(r.CreatedAt), r.CreatedBy, micros(r.UpdatedAt), r.UpdatedBy)
	})
}

func (im *importer) lineItems() error {
	ds := im.ds
	return im.each(`INSERT INTO line_items (`+lineItemCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, len(ds.LineItems), func(i int, st *sql.Stmt) error {
		r := ds.LineItems[i]
		p := at("lineItems", i)
		if err := im.ref(p+".orderId", "deployment_orders", "deployment order", r.OrderID); err != nil {
			return err
		}
		if err := im.ref(p+".deploymentModelId", "deployment_models", "deployment model", r.DeploymentModelID); err != nil {
			return err
		}
		if err := im.optRef(p+".inventoryUnitId", "inventory_units", "inventory unit", r.InventoryUnitID); err != nil {
			return err
		}
		if err := im.optRef(p+".equipmentId", "equipment", "equipment", r.EquipmentID); err != nil {
			return err
		}
		if err := im.optRef(p+".varsheetId", "varsheets", "VAR sheet", r.VarsheetID); err != nil {
			return err
		}
		return im.insert(st, p, "line_items", r.ID, r.ID, r.OrderID, r.OrderType, r.DeploymentModelID, connectionTypeArg(r.ConnectionType),
			r.Status, nullID(r.InventoryUnitID), nullID(r.EquipmentID), nullID(r.VarsheetID),
			micros(r.CreatedAt), r.CreatedBy, micros(r.UpdatedAt), r.UpdatedBy)
	})
}

func (im *importer) shipments() error {
	ds := im.ds
	return im.each(`INSERT INTO shipments (id, line_item_id, status, carrier_code, tracking_number, shipped_date) VALUES (?, ?, ?, ?, ?, ?)`, len(ds.Shipments), func(i int, st *sql.Stmt) error {
		r := ds.Shipments[i]
		p := at("shipments", i)
		if err := im.ref(p+".lineItemId", "line_items", "line item", r.LineItemID); err != nil {
			return err
		}
		return im.insert(st, p, "shipments", r.ID, r.ID, r.LineItemID, r.Status, nullString(r.CarrierCode), nullString(r.TrackingNumber), nullMicros(r.ShippedDate))
	})
}

func (im *importer) fileBuilds() error {
	ds := im.ds
	return im.each(`INSERT INTO file_builds (id, line_item_id, settings) VALUES (?, ?, ?)`, len(ds.FileBuilds), func(i int, st *sql.Stmt) error {
		r := ds.FileBuilds[i]
		p := at("fileBuilds", i)
		if err := im.ref(p+".lineItemId", "line_items", "line item", r.LineItemID); err != nil {
			return err
		}
		return im.insert(st, p, "file_builds", r.ID, r.ID, r.LineItemID, string(r.Settings))
	})
}

func (im *importer) merchantNotes() error {
	ds := im.ds
	return im.each(`INSERT INTO merchant_notes (id, merchant_id, body, created_at, created_by) VALUES (?, ?, ?, ?, ?)`, len(ds.MerchantNotes), func(i int, st *sql.Stmt) error {
		r := ds.MerchantNotes[i]
		p := at("merchantNotes", i)
		if err := im.ref(p+".merchantId", "merchants", "merchant", r.MerchantID); err != nil {
			return err
		}
		return im.insert(st, p, "merchant_notes", r.ID, r.ID, r.MerchantID, r.Body, micros(r.CreatedAt), r.CreatedBy)
	})
}

func (im *importer) auditEvents() error {
	ds := im.ds
	return im.each(`INSERT INTO audit_events (id, at, actor_user_id, action, target_id, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)`, len(ds.AuditEvents), func(i int, st *sql.Stmt) error {
		r := ds.AuditEvents[i]
		return im.insert(st, at("auditEvents", i), "audit_events", r.ID, r.ID, micros(r.At), r.ActorUserID, r.Action, r.TargetID, r.Outcome, r.Detail)
	})
}
