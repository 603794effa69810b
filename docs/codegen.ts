// GraphQL Code Generator configuration for clients of the gateway (Apollo Client, urql, fetch).
// Copy it next to your client and run `npx graphql-codegen --config codegen.ts`; it reads the
// schema from a running gateway (XREG_GRAPHQL_URL) and your operations (CODEGEN_DOCUMENTS).
//
// The gateway's custom scalars, mapped so that no generated type is `any` or `unknown`:
//   JSON      -> JsonValue (defined below: what JSON.parse gives) — attributes, documents, `json`
//   Timestamp -> string    (RFC 3339, e.g. "2024-05-01T12:00:00Z"; `new Date(value)` reads it)
//   ID        -> string    (Relay global ids; opaque)
// `strictScalars` makes a scalar added to the schema later fail generation instead of silently
// becoming `any`. Non-null fields (`registry`, `xid`, …) need no checks in the generated types.
//
// Packages (exact versions the gateway's tests use): @graphql-codegen/cli 5.0.7,
// @graphql-codegen/typescript 4.1.6, @graphql-codegen/typescript-operations 4.6.1,
// @graphql-codegen/add 5.0.3, graphql 16.15.0, typescript 5.9.3.
import type { CodegenConfig } from "@graphql-codegen/cli";

const JSON_VALUE =
  "export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };";

const config: CodegenConfig = {
  overwrite: true,
  schema: process.env.XREG_GRAPHQL_URL ?? "http://localhost:8080/graphql",
  documents: process.env.CODEGEN_DOCUMENTS ?? "src/**/*.graphql",
  generates: {
    [process.env.CODEGEN_OUTPUT ?? "src/generated/graphql.ts"]: {
      plugins: [{ add: { content: JSON_VALUE } }, "typescript", "typescript-operations"],
      config: {
        strictScalars: true,
        scalars: {
          ID: { input: "string", output: "string" },
          JSON: { input: "JsonValue", output: "JsonValue" },
          Timestamp: { input: "string", output: "string" },
        },
        enumsAsTypes: true,
        avoidOptionals: { field: true, inputValue: false, object: true, defaultValue: false },
        useTypeImports: true,
      },
    },
  },
};

export default config;
