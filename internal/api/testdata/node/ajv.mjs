// Validates answers of the API tests with ajv, strict, after converting the document's schemas
// from OpenAPI 3.0 to JSON Schema with @openapi-contrib/openapi-schema-to-json-schema.
//
// node ajv.mjs INPUT: INPUT is JSON {document, answers: [{operation, status, schema, body}]},
// document the tests' closed copy of openapi.yaml, schema an answer's body schema (a $ref into
// the document, or inline). Prints every failure and exits 1 if there is one.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { fromSchema } from "@openapi-contrib/openapi-schema-to-json-schema";

const { document, answers } = JSON.parse(readFileSync(process.argv[2], "utf8"));

// withoutExtensions drops x-* keys: they are OpenAPI's, and ajv's strict mode refuses keywords it
// does not know (the tests' copy has turned x-extensible-enum into enum already).
function withoutExtensions(v) {
  if (Array.isArray(v)) return v.map(withoutExtensions);
  if (v === null || typeof v !== "object") return v;
  const out = {};
  for (const [k, e] of Object.entries(v)) {
    if (!k.startsWith("x-")) out[k] = withoutExtensions(e);
  }
  return out;
}

function convert(schema) {
  const s = fromSchema(withoutExtensions(schema), { strictMode: true });
  delete s.$schema; // draft-04 by name; what it converts to is read the same by draft 7
  return s;
}

// The document's schemas become the definitions of one JSON Schema, "openapi.json", and its
// references point there.
function absolute(schema) {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"openapi.json#/definitions/'));
}

const definitions = {};
for (const [name, schema] of Object.entries(document.components.schemas)) {
  definitions[name] = absolute(convert(schema));
}
const ajv = new Ajv({ strict: true, allErrors: true });
addFormats(ajv);
ajv.addSchema({ definitions }, "openapi.json");

const compiled = new Map();
let failures = 0;
for (const a of answers) {
  const key = JSON.stringify(a.schema);
  if (!compiled.has(key)) {
    const s = absolute(a.schema.$ref ? a.schema : convert(a.schema));
    compiled.set(key, ajv.compile(s));
  }
  const check = compiled.get(key);
  if (!check(JSON.parse(a.body))) {
    failures++;
    console.log(`${a.operation} -> ${a.status}: ${ajv.errorsText(check.errors)}\nbody: ${a.body}`);
  }
}
console.log(`ajv: ${answers.length} answers, ${failures} failed`);
process.exit(failures > 0 ? 1 : 0);
