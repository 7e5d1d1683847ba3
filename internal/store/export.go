package store

import (
	"context"
	"database/sql"
	"fmt"

	"backoffice/internal/dataset"
	"backoffice/internal/domain"
	"backoffice/internal/secrets"
)

// Export reads the whole database as a dataset, including what the service produced (merchant
// notes, audit events). Credentials are never exported. SSNs are left out unless ring is given,
// in which case they are opened and exported in plaintext. It reads in one transaction, so the
// file is one consistent snapshot, and serving goes on meanwhile.
func (s *Store) Export(ctx context.Context, ring *secrets.Ring) (*dataset.Dataset, error) {
	ds := &dataset.Dataset{}
	err := s.snapshot(ctx, func(q querier) error {
		steps := []func() error{
			func() (err error) {
				ds.Partners, err = readAll(ctx, q, `SELECT id, name FROM partners ORDER BY id`, func(r scanner) (p domain.Partner, err error) {
					return p, r.Scan(&p.ID, &p.Name)
				})
				return err
			},
			func() (err error) {
				ds.Users, err = readAll(ctx, q, `SELECT id, partner_id, email, permissions FROM users ORDER BY id`, func(r scanner) (u domain.User, err error) {
					var partner sql.NullString
					var perms string
					err = r.Scan(&u.ID, &partner, &u.Email, &perms)
					u.PartnerID, u.Permissions = idPtr(partner), domain.ParsePermissions(perms)
					if u.Permissions == nil {
						u.Permissions = []domain.Permission{}
					}
					return u, err
				})
				return err
			},
			func() (err error) {
				ds.CardPlans, err = readAll(ctx, q, `SELECT id, code, display_name, sort_order FROM card_plans ORDER BY id`, func(r scanner) (c domain.CardPlan, err error) {
					return c, r.Scan(&c.ID, &c.Code, &c.DisplayName, &c.SortOrder)
				})
				return err
			},
			func() error { return exportLeads(ctx, q, ds) },
			func() (err error) {
				ds.Principals, err = exportPrincipals(ctx, q, ring)
				return err
			},
			func() (err error) {
				ds.Merchants, err = readAll(ctx, q, `SELECT id, partner_id, lead_id, name FROM merchants ORDER BY id`, func(r scanner) (m domain.Merchant, err error) {
					var lead sql.NullString
					err = r.Scan(&m.ID, &m.PartnerID, &lead, &m.Name)
					m.LeadID = idPtr(lead)
					return m, err
				})
				return err
			},
			func() (err error) {
				ds.MerchantDocuments, err = readAll(ctx, q, `SELECT id, merchant_id, file_name, content_type, content FROM merchant_documents ORDER BY id`, func(r scanner) (d domain.MerchantDocument, err error) {
					return d, r.Scan(&d.ID, &d.MerchantID, &d.FileName, &d.ContentType, &d.ContentBase64)
				})
				return err
			},
			func() (err error) {
				ds.PricingModels, err = readAll(ctx, q, `SELECT id, merchant_id, active, type, adjustment_percent FROM pricing_models ORDER BY id`, func(r scanner) (p domain.PricingModel, err error) {
					var adj sql.NullString
					err = r.Scan(&p.ID, &p.MerchantID, &p.Active, &p.Type, &adj)
					p.AdjustmentPercent = strPtr(adj)
					return p, err
				})
				return err
			},
			func() (err error) {
				ds.DeploymentModels, err = readAll(ctx, q, `SELECT id, name, equipment_type, workflow FROM deployment_models ORDER BY id`, func(r scanner) (m domain.DeploymentModel, err error) {
					return m, r.Scan(&m.ID, &m.Name, &m.EquipmentType, &m.Workflow)
				})
				return err
			},
			func() (err error) {
				ds.DeploymentOrders, err = readAll(ctx, q, `SELECT id, merchant_id FROM deployment_orders ORDER BY id`, func(r scanner) (o domain.DeploymentOrder, err error) {
					return o, r.Scan(&o.ID, &o.MerchantID)
				})
				return err
			},
			func() (err error) {
				ds.InventoryUnits, err = readAll(ctx, q, `SELECT `+inventoryUnitCols+` FROM inventory_units ORDER BY id`, scanInventoryUnit)
				return err
			},
			func() (err error) {
				ds.Equipment, err = readAll(ctx, q, `SELECT `+equipmentCols+` FROM equipment ORDER BY id`, func(r scanner) (domain.Equipment, error) { return scanEquipment(r) })
				return err
			},
			func() (err error) {
				ds.Varsheets, err = readAll(ctx, q, `SELECT `+varsheetCols+` FROM varsheets ORDER BY id`, scanVarsheet)
				return err
			},
			func() (err error) {
				ds.LineItems, err = readAll(ctx, q, `SELECT `+lineItemCols+` FROM line_items ORDER BY id`, scanLineItem)
				return err
			},
			func() (err error) {
				ds.Shipments, err = readAll(ctx, q, `SELECT `+shipmentCols+`, line_item_id FROM shipments ORDER BY id`, func(r scanner) (s dataset.Shipment, err error) {
					s.Shipment, err = scanShipment(r, &s.LineItemID)
					return s, err
				})
				return err
			},
			func() (err error) {
				ds.FileBuilds, err = readAll(ctx, q, `SELECT id, line_item_id, settings FROM file_builds ORDER BY id`, func(r scanner) (f domain.FileBuild, err error) {
					var settings string
					err = r.Scan(&f.ID, &f.LineItemID, &settings)
					f.Settings = []byte(settings)
					return f, err
				})
				return err
			},
			func() (err error) {
				ds.SAMActionLogs, err = readAll(ctx, q, `SELECT id, entity_id, action, action_date, sam_id FROM sam_action_logs ORDER BY entity_id, pos DESC`, func(r scanner) (l domain.SAMActionLog, err error) {
					var id, entity sql.RawBytes // read before the next row
					var date int64
					if err = r.Scan(&id, &entity, &l.Action, &date, &l.SamID); err != nil {
						return l, err
					}
					if l.ID, err = idOfUUID(id); err != nil {
						return l, err
					}
					l.EntityID, err = idOfUUID(entity)
					l.ActionDate = fromMicros(date)
					return l, err
				})
				return err
			},
			func() (err error) {
				ds.MerchantNotes, err = readAll(ctx, q, `SELECT id, merchant_id, body, created_at, created_by FROM merchant_notes ORDER BY created_at, id`, func(r scanner) (n domain.MerchantNote, err error) {
					var at int64
					err = r.Scan(&n.ID, &n.MerchantID, &n.Body, &at, &n.CreatedBy)
					n.CreatedAt = fromMicros(at)
					return n, err
				})
				return err
			},
			func() (err error) {
				ds.AuditEvents, err = readAll(ctx, q, `SELECT id, at, actor_user_id, action, target_id, outcome, detail FROM audit_events ORDER BY at, id`, func(r scanner) (e domain.AuditEvent, err error) {
					var at int64
					err = r.Scan(&e.ID, &at, &e.ActorUserID, &e.Action, &e.TargetID, &e.Outcome, &e.Detail)
					e.At = fromMicros(at)
					return e, err
				})
				return err
			},
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: export: %w", err)
	}
	return ds, nil
}

// readAll runs query with args and scans every row. Its errors are the query's, classified; the
// caller says what it was reading.
func readAll[T any](ctx context.Context, q querier, query string, scan func(scanner) (T, error), args ...any) ([]T, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func exportLeads(ctx context.Context, q querier, ds *dataset.Dataset) error {
	selected := map[domain.ID][]domain.ID{}
	pairs, err := readAll(ctx, q, `SELECT lead_id, card_plan_id FROM lead_card_plans ORDER BY lead_id, card_plan_id`, func(r scanner) (p [2]domain.ID, err error) {
		return p, r.Scan(&p[0], &p[1])
	})
	if err != nil {
		return err
	}
	for _, p := range pairs {
		selected[p[0]] = append(selected[p[0]], p[1])
	}
	ds.Leads, err = readAll(ctx, q, `SELECT id, partner_id, business_name, mid_id, sa_configured, sa_ebt_fcs_number, sa_amex_program, sa_amex_esa_number, sa_ebt_benefit_mode FROM leads ORDER BY id`, func(r scanner) (l domain.Lead, err error) {
		var mid, fcs, amex, esa, ebt sql.NullString
		var configured sql.NullBool
		err = r.Scan(&l.ID, &l.PartnerID, &l.BusinessName, &mid, &configured, &fcs, &amex, &esa, &ebt)
		l.MidID = idPtr(mid)
		if configured.Valid {
			plans := selected[l.ID]
			if plans == nil {
				plans = []domain.ID{}
			}
			l.ServiceAcceptance = &domain.StoredAcceptance{Configured: configured.Bool, SelectedCardPlanIDs: plans,
				EBTFcsNumber: strPtr(fcs), AmexProgram: strPtr(amex), AmexEsaNumber: strPtr(esa), EBTBenefitMode: strPtr(ebt)}
		}
		return l, err
	})
	return err
}

// exportPrincipals opens SSNs only when a ring is given (the --include-secrets export).
func exportPrincipals(ctx context.Context, q querier, ring *secrets.Ring) ([]domain.Principal, error) {
	return readAll(ctx, q, `SELECT id, lead_id, first_name, last_name, ssn_key_id, ssn_sealed FROM principals ORDER BY id`, func(r scanner) (p domain.Principal, err error) {
		var keyID sql.NullString
		var sealed []byte
		if err = r.Scan(&p.ID, &p.LeadID, &p.FirstName, &p.LastName, &keyID, &sealed); err != nil {
			return p, err
		}
		if ring == nil || !keyID.Valid {
			return p, nil
		}
		pt, err := ring.Open(keyID.String, sealed, secrets.PrincipalAAD(string(p.ID), "ssn"))
		if err != nil {
			return p, fmt.Errorf("principal %s: %w", p.ID, err)
		}
		ssn := string(pt)
		p.SSN = &ssn
		return p, nil
	})
}
