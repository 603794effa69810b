/* The GraphiQL page's own script: plain JavaScript, no build step. gateway/graphiql.py inlines
 * it into the page and allows it by its hash in the Content-Security-Policy.
 *
 * - Share links: ?query=, ?variables=, ?operationName= open in the editor, and the address bar
 *   follows the editor (history.replaceState), so copying it shares the current query. The
 *   values only ever reach the editors, never HTML.
 * - Subscriptions run over a WebSocket (graphql-ws, graphql-transport-ws) on the same /graphql;
 *   the Authorization of the headers editor goes in the connection_init payload.
 * - Plugins (GraphiQL's public plugin API): the explorer (@graphiql/plugin-explorer), the
 *   example queries (as share links), and a table of a list result with a CSV download.
 */
(function () {
  "use strict";
  var h = React.createElement;
  var config = JSON.parse(document.getElementById("graphiql-config").textContent);

  /* ---- Share links ------------------------------------------------------------------------- */

  var SHARED = ["query", "variables", "operationName"];

  function shareParams(values) {
    var params = new URLSearchParams();
    SHARED.forEach(function (key) { if (values[key]) params.set(key, values[key]); });
    return params;
  }

  var shared = {};
  var fromUrl = new URLSearchParams(window.location.search);
  SHARED.forEach(function (key) { if (fromUrl.has(key)) shared[key] = fromUrl.get(key); });

  function followEditor(key, value) {
    shared[key] = value || "";
    var search = shareParams(shared).toString();
    window.history.replaceState(null, "", search ? "?" + search : window.location.pathname);
  }

  var activeTabId = null;
  function onTabChange(state) {
    var tab = state.tabs[state.activeTabIndex];
    if (!tab || tab.id === activeTabId) return;
    activeTabId = tab.id;
    shared = {};
    followEditor("variables", tab.variables);
    followEditor("operationName", tab.operationName);
    followEditor("query", tab.query);
  }

  /* ---- Table of a list result, and its CSV --------------------------------------------------- */

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  /** Every list of objects in `data` outside other lists: {path, rows}; a connection's edges
   * give their nodes. */
  function findLists(value, path, found) {
    if (Array.isArray(value)) {
      var objects = value.filter(isObject);
      if (objects.length && objects.length === value.length) {
        var edges = objects.every(function (item) { return isObject(item.node); });
        found.push({
          path: edges ? path + "[].node" : path,
          rows: edges ? objects.map(function (item) { return item.node; }) : objects
        });
      }
    } else if (isObject(value)) {
      Object.keys(value).forEach(function (key) {
        findLists(value[key], path ? path + "." + key : key, found);
      });
    }
    return found;
  }

  /** One row: nested objects as dotted columns, lists as JSON. */
  function flatten(value, prefix, row) {
    Object.keys(value).forEach(function (key) {
      var cell = value[key];
      var column = prefix ? prefix + "." + key : key;
      if (isObject(cell)) flatten(cell, column, row);
      else row[column] = Array.isArray(cell) ? JSON.stringify(cell) : cell;
    });
    return row;
  }

  function tabulate(rows) {
    var flat = rows.map(function (row) { return flatten(row, "", {}); });
    var columns = [];
    var seen = {};
    flat.forEach(function (row) {
      Object.keys(row).forEach(function (column) {
        if (!seen[column]) { seen[column] = true; columns.push(column); }
      });
    });
    return { columns: columns, rows: flat };
  }

  function text(cell) {
    return cell === null || cell === undefined ? "" : String(cell);
  }

  /** RFC 4180 CSV. A text cell that a spreadsheet would run as a formula gets a leading '. */
  function csvCell(cell) {
    var value = text(cell);
    if (typeof cell === "string" && /^[=+\-@\t\r]/.test(value)) value = "'" + value;
    return /[",\r\n]/.test(value) ? '"' + value.replace(/"/g, '""') + '"' : value;
  }

  function toCsv(table) {
    var lines = [table.columns.map(csvCell).join(",")];
    table.rows.forEach(function (row) {
      lines.push(table.columns.map(function (column) { return csvCell(row[column]); }).join(","));
    });
    return lines.join("\r\n") + "\r\n";
  }

  var downloadUrl = null;
  function download(name, csv) {
    if (downloadUrl) URL.revokeObjectURL(downloadUrl);  // the previous download's, long done
    downloadUrl = URL.createObjectURL(new Blob(["\ufeff" + csv], { type: "text/csv;charset=utf-8" }));
    var link = document.createElement("a");
    link.href = downloadUrl;
    link.download = name.replace(/[^A-Za-z0-9._-]+/g, "_") + ".csv";
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  var SHOWN_ROWS = 500;

  function TablePanel() {
    var editor = GraphiQL.React.useEditorContext({ nonNull: true }).responseEditor;
    var state = React.useState(editor ? editor.getValue() : "");
    var response = state[0];
    var setResponse = state[1];
    React.useEffect(function () {
      if (!editor) return undefined;
      var update = function () { setResponse(editor.getValue()); };
      update();
      editor.on("change", update);
      return function () { editor.off("change", update); };
    }, [editor]);
    var lists = React.useMemo(function () {
      try {
        var parsed = JSON.parse(response);
        return isObject(parsed) ? findLists(parsed.data, "", []) : [];
      } catch (error) {
        return [];
      }
    }, [response]);
    var chosen = React.useState(0);
    var list = lists[Math.min(chosen[0], lists.length - 1)];
    var table = React.useMemo(function () { return list ? tabulate(list.rows) : null; }, [list]);

    var header = h("div", { className: "graphiql-doc-explorer-title" }, "Table");
    if (!table) {
      return h("div", { className: "xreg-table" }, header,
        h("p", null, "Run a query whose answer holds a list of objects (a connection's ",
          h("code", null, "nodes"), " or ", h("code", null, "edges"), "): it shows here as rows."));
    }
    return h("div", { className: "xreg-table" }, header,
      h("div", { className: "xreg-table-controls" },
        h("select", {
          "aria-label": "List",
          value: lists.indexOf(list),
          onChange: function (event) { chosen[1](Number(event.target.value)); }
        }, lists.map(function (item, index) {
          return h("option", { key: item.path, value: index }, item.path + " (" + item.rows.length + ")");
        })),
        h("button", {
          type: "button",
          className: "graphiql-button",
          onClick: function () { download(list.path, toCsv(table)); }
        }, "Download CSV")),
      h("p", { className: "xreg-table-size" },
        table.rows.length + " rows × " + table.columns.length + " columns" +
        (table.rows.length > SHOWN_ROWS ? " (the first " + SHOWN_ROWS + " shown; the CSV has all)" : "")),
      h("div", { className: "xreg-table-scroll" },
        h("table", null,
          h("thead", null, h("tr", null, table.columns.map(function (column) {
            return h("th", { key: column, scope: "col" }, column);
          }))),
          h("tbody", null, table.rows.slice(0, SHOWN_ROWS).map(function (row, index) {
            return h("tr", { key: index }, table.columns.map(function (column) {
              return h("td", { key: column }, text(row[column]));
            }));
          })))));
  }

  /* ---- Examples ------------------------------------------------------------------------------ */

  function exampleLink(example) {
    return "?" + shareParams({ query: example.query, variables: example.variables }).toString();
  }

  function ExamplesPanel() {
    return h("div", { className: "xreg-examples" },
      h("div", { className: "graphiql-doc-explorer-title" }, "Examples"),
      h("p", null, "Each opens in a tab of its own; the address bar is its share link."),
      h("ul", null, config.examples.map(function (example) {
        return h("li", { key: example.name },
          h("a", { href: exampleLink(example), "data-example": example.name }, example.title),
          h("p", null, example.description));
      })));
  }

  /* ---- Icons and the page -------------------------------------------------------------------- */

  function icon(path) {
    return function Icon() {
      return h("svg", { viewBox: "0 0 24 24", width: "1em", height: "1em", fill: "none",
        stroke: "currentColor", strokeWidth: 1.5, "aria-hidden": "true" }, h("path", { d: path }));
    };
  }

  var plugins = [
    GraphiQLPluginExplorer.explorerPlugin(),
    { title: "Examples", icon: icon("M4 5h16M4 10h16M4 15h10M4 20h7"), content: ExamplesPanel },
    { title: "Table", icon: icon("M3 4h18v16H3zM3 10h18M3 15h18M9 4v16M15 4v16"), content: TablePanel }
  ];

  /* ---- Fetcher: queries and mutations over HTTP, subscriptions over a WebSocket --------------- */

  var endpoint = new URL(config.endpoint, document.baseURI);
  var socketUrl = new URL(endpoint.href);
  socketUrl.protocol = endpoint.protocol === "https:" ? "wss:" : "ws:";
  var fetchers = {};

  /** The fetcher of one Authorization value (from the headers editor): browsers cannot set headers on
   * a WebSocket, so graphql-ws sends it in its connection_init payload. */
  function fetcherFor(authorization) {
    var key = authorization || "";
    if (!fetchers[key]) {
      fetchers[key] = GraphiQL.createFetcher({
        url: endpoint.href,
        wsClient: graphqlWs.createClient({
          url: socketUrl.href,
          lazy: true,
          connectionParams: authorization ? { Authorization: authorization } : {}
        })
      });
    }
    return fetchers[key];
  }

  function fetcher(params, options) {
    var headers = (options && options.headers) || {};
    return fetcherFor(headers.Authorization || headers.authorization)(params, options);
  }

  var props = {
    fetcher: fetcher,
    plugins: plugins,
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: false,
    onEditQuery: function (value) { followEditor("query", value); },
    onEditVariables: function (value) { followEditor("variables", value); },
    onEditOperationName: function (value) { followEditor("operationName", value); },
    onTabChange: onTabChange
  };
  if (shared.query !== undefined) {
    // A share link: its query opens in a tab (a new one, or the tab that already holds it).
    props.query = shared.query;
    props.variables = shared.variables;
    props.operationName = shared.operationName;
  } else {
    // A first visit: one tab per example.
    props.defaultTabs = config.examples.map(function (example) {
      return { query: example.query, variables: example.variables };
    });
  }

  ReactDOM.createRoot(document.getElementById("graphiql")).render(h(GraphiQL, props));
})();
