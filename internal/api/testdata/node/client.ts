// A TypeScript client of the service as another team would write one: types generated from
// openapi.yaml by openapi-typescript (api.d.ts, made by the test), calls made with openapi-fetch.
// It calls every operation of the document once at least, checks what it gets, and prints the
// operations it called (its last line, JSON) for the test to compare with the document. tsc
// compiles it strictly first: a type the document gets wrong for these calls fails there.
import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

declare const process: { env: Record<string, string | undefined>; exit(code: number): never };

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

const origin = env("ORIGIN");
const lead = env("LEAD");
const principal = env("PRINCIPAL");
const merchant = env("MERCHANT");
const doc = env("DOC");
const order = env("ORDER");
const bareItem = env("BARE_ITEM");
const auditEvent = env("AUDIT_EVENT");

const client = createClient<paths>({ baseUrl: env("BASE_URL"), headers: { Authorization: `Api-Key ${env("API_KEY")}` } });

const failures: string[] = [];
const called: string[] = [];

function check(ok: boolean, what: string, res: Response) {
  called.push(`${res.status} ${what}`);
  if (!ok) failures.push(`${what}: status ${res.status}`);
}

function requestId(res: Response): boolean {
  return /^[0-9a-f]{16}$/.test(res.headers.get("X-Request-Id") ?? "");
}

const preflight = (method: string) => ({
  header: { Origin: origin, "Access-Control-Request-Method": method },
});

async function main() {
  // The document, the reference page and its script.
  {
    const r = await client.GET("/openapi.yaml", { parseAs: "text" });
    check(r.response.status === 200 && (r.data ?? "").startsWith("openapi: 3.0.3"), "GET /openapi.yaml", r.response);
    const h = await client.HEAD("/openapi.yaml");
    check(h.response.status === 200 && requestId(h.response), "HEAD /openapi.yaml", h.response);
  }
  for (const p of ["/docs", "/docs/redoc.standalone.js"] as const) {
    const r = await client.GET(p, { parseAs: "text" });
    check(r.response.status === 200 && (r.data ?? "").length > 0, `GET ${p}`, r.response);
    const h = await client.HEAD(p);
    check(h.response.status === 200, `HEAD ${p}`, h.response);
  }

  // Health, readiness, metrics.
  {
    const live = await client.GET("/healthz");
    const status: "ok" | "ready" | undefined = live.data?.status;
    check(status === "ok", "GET /healthz", live.response);
    const ready = await client.GET("/readyz");
    check(ready.data?.status === "ready", "GET /readyz", ready.response);
    const metrics = await client.GET("/metrics", { parseAs: "text" });
    check(metrics.response.status === 200, "GET /metrics", metrics.response);
    for (const p of ["/healthz", "/readyz", "/metrics"] as const) {
      const h = await client.HEAD(p);
      check(h.response.status === 200, `HEAD ${p}`, h.response);
    }
  }

  // 4.1: a line item without inventory unit and shipment answers both null.
  const pushPath = "/v1/crm/deployment-orders/{orderId}/line-items/{lineItemId}/device-parameters" as const;
  {
    const r = await client.POST(pushPath, { params: { path: { orderId: order, lineItemId: bareItem } } });
    const unit: components["schemas"]["DeploymentInventoryUnit"] | undefined = r.data?.inventoryUnit;
    const type: "terminal" | "pin_pad" | "lite_pos" | "mobile_app" | "var_sheet" | "gateway" | null | undefined =
      r.data?.equipment?.equipmentType;
    check(r.response.status === 200 && unit === null && r.data?.shipment === null && type === "terminal", `POST ${pushPath}`, r.response);
    const o = await client.OPTIONS(pushPath, { params: { path: { orderId: order, lineItemId: bareItem }, ...preflight("POST") } });
    check(o.response.status === 204 && o.response.headers.get("Access-Control-Allow-Methods") === "POST", `OPTIONS ${pushPath}`, o.response);
  }

  // 4.2, its HEAD, and a 400 that names its parameter.
  const samPath = "/v1/crm/sam-action-logs/{entityId}" as const;
  {
    const r = await client.GET(samPath, { params: { path: { entityId: lead }, query: { page: 2, size: 5 } } });
    const page: number | undefined = r.data?.meta.page;
    check(r.response.status === 200 && page === 2 && r.data?.data.length === 5, `GET ${samPath}`, r.response);
    const bad = await client.GET(samPath, { params: { path: { entityId: lead }, query: { page: 0 } } });
    const parameter: string | undefined = bad.error?.parameter;
    check(bad.response.status === 400 && bad.error?.code === "invalid_parameter" && parameter === "page", `GET ${samPath} (page 0)`, bad.response);
    const h = await client.HEAD(samPath, { params: { path: { entityId: lead } } });
    check(h.response.status === 200 && requestId(h.response), `HEAD ${samPath}`, h.response);
    const o = await client.OPTIONS(samPath, { params: { path: { entityId: lead }, ...preflight("GET") } });
    check(o.response.status === 204, `OPTIONS ${samPath}`, o.response);
  }

  // 4.3: the nullable enums are their values or null.
  const acceptancePath = "/v1/crm/leads/{leadId}/service-acceptance" as const;
  {
    const r = await client.GET(acceptancePath, { params: { path: { leadId: lead } } });
    const program: "opt_blue" | "esa" | null | undefined = r.data?.amexProgram;
    const mode: "cash_back_only" | "food_stamps_only" | "both" | null | undefined = r.data?.ebtBenefitMode;
    check(r.response.status === 200 && r.data?.configured === true && program !== undefined && mode !== undefined, `GET ${acceptancePath}`, r.response);
    const missing = await client.GET(acceptancePath, { params: { path: { leadId: "00000000-0000-4000-8000-00000000dead" } } });
    check(missing.response.status === 404 && missing.error?.code === "not_found", `GET ${acceptancePath} (unknown lead)`, missing.response);
    const h = await client.HEAD(acceptancePath, { params: { path: { leadId: lead } } });
    check(h.response.status === 200, `HEAD ${acceptancePath}`, h.response);
    const o = await client.OPTIONS(acceptancePath, { params: { path: { leadId: lead }, ...preflight("GET") } });
    check(o.response.status === 204, `OPTIONS ${acceptancePath}`, o.response);
  }

  // 4.4.
  const decryptPath = "/v1/crm/leads/{leadId}/principals/{principalId}/decrypt/{field}" as const;
  {
    const path = { leadId: lead, principalId: principal, field: "ssn" };
    const r = await client.GET(decryptPath, { params: { path } });
    check(r.response.status === 200 && /^\d{3}-\d{2}-\d{4}$/.test(r.data?.ssn ?? "") && r.response.headers.get("Cache-Control") === "no-store",
      `GET ${decryptPath}`, r.response);
    const o = await client.OPTIONS(decryptPath, { params: { path, ...preflight("GET") } });
    check(o.response.status === 204, `OPTIONS ${decryptPath}`, o.response);
  }

  // 4.5 under an Idempotency-Key: the repeat is told it was its own deletion.
  const documentPath = "/v1/crm/merchants/{merchantId}/documents/{documentId}" as const;
  {
    const params = { path: { merchantId: merchant, documentId: doc }, header: { "Idempotency-Key": "ts-client-delete" } };
    const first = await client.DELETE(documentPath, { params });
    check(first.response.status === 204 && first.response.headers.get("Idempotent-Replayed") === null, `DELETE ${documentPath}`, first.response);
    const again = await client.DELETE(documentPath, { params });
    check(again.response.status === 204 && again.response.headers.get("Idempotent-Replayed") === "true", `DELETE ${documentPath} (repeat)`, again.response);
    const o = await client.OPTIONS(documentPath, { params: { path: { merchantId: merchant, documentId: doc }, ...preflight("DELETE") } });
    check(o.response.status === 204, `OPTIONS ${documentPath}`, o.response);
  }

  // The audit list: the deletion and its replay are in it.
  {
    const r = await client.GET("/v1/audit-events", { params: { query: { action: "merchant_document.delete", targetId: doc } } });
    const outcomes = (r.data?.data ?? []).map((e) => e.outcome);
    check(r.response.status === 200 && outcomes.length === 2 && outcomes.every((o) => o === "granted"), "GET /v1/audit-events", r.response);
    const h = await client.HEAD("/v1/audit-events");
    check(h.response.status === 200, "HEAD /v1/audit-events", h.response);
    const o = await client.OPTIONS("/v1/audit-events", { params: preflight("GET") });
    check(o.response.status === 204, "OPTIONS /v1/audit-events", o.response);
  }

  // The trail's tiles (a tree of 300 events: one full level 0 tile, a partial one of 44) and
  // an event's proof.
  {
    const tileCalls: [string, Record<string, string>, number][] = [
      ["/v1/audit-log/tile/{level}/{p1}", { level: "0", p1: "000" }, 200],
      ["/v1/audit-log/tile/{level}/{p1}/{p2}", { level: "entries", p1: "001.p", p2: "44" }, 200],
      ["/v1/audit-log/tile/{level}/{p1}/{p2}/{p3}", { level: "0", p1: "x001", p2: "x000", p3: "000" }, 404],
      ["/v1/audit-log/tile/{level}/{p1}/{p2}/{p3}/{p4}", { level: "1", p1: "x001", p2: "x000", p3: "000.p", p4: "1" }, 404],
    ];
    for (const [path, params, status] of tileCalls) {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const g = await client.GET(path as any, { params: { path: params }, parseAs: "arrayBuffer" });
      const size = g.data instanceof ArrayBuffer ? g.data.byteLength : -1;
      check(g.response.status === status && (status !== 200 || size > 0), `GET ${path}`, g.response);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const h = await client.HEAD(path as any, { params: { path: params } });
      check(h.response.status === status, `HEAD ${path}`, h.response);
    }
    const cp = await client.GET("/v1/audit-log/checkpoint", { parseAs: "text" });
    check(cp.response.status === 200 && typeof cp.data === "string" && cp.data.includes("\n\n\u2014 "), "GET /v1/audit-log/checkpoint", cp.response);
    const cph = await client.HEAD("/v1/audit-log/checkpoint");
    check(cph.response.status === 200, "HEAD /v1/audit-log/checkpoint", cph.response);
    const cpo = await client.OPTIONS("/v1/audit-log/checkpoint", { params: preflight("GET") });
    check(cpo.response.status === 204, "OPTIONS /v1/audit-log/checkpoint", cpo.response);
    const pr = await client.GET("/v1/audit-log/pruned", { parseAs: "text" });
    check(pr.response.status === 200 && typeof pr.data === "string" && pr.data.includes("\n\n\u2014 "), "GET /v1/audit-log/pruned", pr.response);
    const prh = await client.HEAD("/v1/audit-log/pruned");
    check(prh.response.status === 200, "HEAD /v1/audit-log/pruned", prh.response);
    const proofPath = "/v1/audit-events/{eventId}/proof" as const;
    const p = await client.GET(proofPath, { params: { path: { eventId: auditEvent } } });
    check(p.response.status === 200 && p.data?.event.id === auditEvent && (p.data?.proof ?? "").startsWith("c2sp.org/tlog-proof@v1\n"), `GET ${proofPath}`, p.response);
    const h = await client.HEAD(proofPath, { params: { path: { eventId: auditEvent } } });
    check(h.response.status === 200, `HEAD ${proofPath}`, h.response);
  }
}

main().then(
  () => {
    for (const f of failures) console.log("FAIL " + f);
    console.log(JSON.stringify(called));
    process.exit(failures.length > 0 ? 1 : 0);
  },
  (err) => {
    console.log("FAIL " + String(err));
    process.exit(1);
  },
);
