// Package pricing estimates what a turn's model calls cost: a dated table
// of list prices per million input and output tokens, by "provider:model"
// (or a "provider:prefix*" pattern, the longest matching first), in the
// repository (prices.json), replaceable entry by entry from a JSON file
// (CAIRN_PRICES). The estimate is tokens × price; it is what the table
// says, not an invoice.
//
// It may import shared/contracts and the standard library.
package pricing
