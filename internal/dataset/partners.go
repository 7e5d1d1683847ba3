package dataset

import (
	"fmt"
	"slices"

	"backoffice/internal/domain"
	"backoffice/internal/store/bulkload"
)

// Equipment and VAR sheets name no partner of their own: they belong to the partner of the line
// items that use them (docs/api.md, Tenancy), a VAR sheet also through their equipment. A push
// embeds its line item's equipment and VAR sheet in its answer and sends them to the gateway, so
// one used by line items of two partners would be shown to, and pushed by, either partner's
// users. Inventory units belong to no partner (stock: a unit taken back and refurbished goes out
// on another merchant's order), so they are not held to this.

// partnerOwned are the kinds that belong to the partner of the line items that use them.
var partnerOwned = []struct {
	key  string
	uses bulkload.Uses
	rule string
}{
	{"equipment", bulkload.EquipmentUses, "equipment belongs to the partner of the line items it is on"},
	{"varsheets", bulkload.VarsheetUses, "a VAR sheet belongs to the partner of the line items that use it, directly or through their equipment"},
}

// ownershipKeys are the kinds whose records decide which partner's line items use what: a file
// with none of them cannot make two partners share a record (its deletes only take uses away).
var ownershipKeys = []string{"merchants", "deploymentOrders", "lineItems", "equipment"}

// partnersApart refuses an import after which line items of two partners use one piece of
// equipment or one VAR sheet, naming the file's record that makes them.
func (im *importer) partnersApart() error {
	if !slices.ContainsFunc(ownershipKeys, func(key string) bool { return im.kinds[key].count(im.ds) > 0 }) {
		return nil
	}
	for _, o := range partnerOwned {
		ref, by, found, err := im.b.SharedAcrossPartners(o.uses)
		if err != nil || found {
			return cmpOr(err, Errorf(im.sharer(o.key, by), "%s %s would be used by line items of two partners, %s and %s: %s; give each partner's line items their own",
				im.kinds[o.key].what, ref, describeUse(by[0]), describeUse(by[1]), o.rule))
		}
	}
	return nil
}

// describeUse names a line item's use of a record, and the partner it belongs to.
func describeUse(u bulkload.PartnerUse) string {
	if u.Via != "" {
		return fmt.Sprintf("line item %s (partner %s, through equipment %s)", u.LineItem, u.Partner, u.Via)
	}
	return fmt.Sprintf("line item %s (partner %s)", u.LineItem, u.Partner)
}

// sharer is the field of the file's record that makes line items of two partners use a record of
// key: the line item's own reference, else its equipment's (a VAR sheet through it), else what
// made the line item another partner's (its order's merchant, that merchant's partner). When the
// file holds none of them (the database held the sharing already), it is the stored line item's.
func (im *importer) sharer(key string, by [2]bulkload.PartnerUse) string {
	field := func(u bulkload.PartnerUse) string {
		if key == "equipment" || u.Via != "" {
			return "equipmentId"
		}
		return "varsheetId"
	}
	find := func(key string, id domain.ID) int { return slices.Index(im.kinds[key].ids(im.ds), id) }
	for _, u := range by {
		if i := find("lineItems", u.LineItem); i >= 0 {
			return at("lineItems", i) + "." + field(u)
		}
	}
	for _, u := range by {
		if i := find("equipment", u.Via); u.Via != "" && i >= 0 {
			return at("equipment", i) + ".varsheetId"
		}
	}
	for _, u := range by {
		if i := find("deploymentOrders", u.Order); i >= 0 {
			return at("deploymentOrders", i) + ".merchantId"
		}
	}
	for _, u := range by {
		if i := find("merchants", u.Merchant); i >= 0 {
			return at("merchants", i) + ".partnerId"
		}
	}
	return fmt.Sprintf("lineItems[%s].%s", by[1].LineItem, field(by[1]))
}
