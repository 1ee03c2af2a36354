-- usher forward auth for HAProxy 2.6 or later, built with Lua (Debian's
-- and the official packages are: haproxy -vv says "Built with Lua").
-- docs/integrations/haproxy.md explains it; haproxy.cfg beside it loads it.
-- This file is the one usher's tests run (cmd/usher/e2e_proxy_haproxy_test.go).
--
--   http-request lua.usher-auth <usher forward_auth.listen host:port>
--       asks usher's /__usher/auth, on usher's private forward-auth
--       listener, about the request. Let through (2xx): the request goes
--       on with usher's X-Usher-Admission (a client's own is always
--       removed), without usher's cookies (the origin gets the visitor's
--       others), and the ticket's Set-Cookie is kept for the response. Not yet (any other answer): usher's answer (the waiting
--       page, its JSON, the reject page) goes to the visitor as it is.
--       usher unreachable: 503, nobody let through.
--   http-response lua.usher-cookies
--       adds the Set-Cookie headers kept by usher-auth to the response.

-- The visitor's headers usher reads: the ticket cookie, the answer's
-- format and language, the user agent (for rules), an app's proof-of-work
-- solution. Add any header a bypass rule of yours reads.
local pass = { "cookie", "accept", "accept-language", "user-agent", "x-usher-pow" }

-- The country header for usher's rules (country_header in usher's
-- config) is not passed: set headers["x-country"] in usher-auth below from
-- a source you trust (never from the visitor's request).

-- Headers of usher's answer that belong to that connection only.
local hop = { ["connection"] = true, ["keep-alive"] = true, ["transfer-encoding"] = true,
	["content-length"] = true }

-- values returns a header's values as a list, whatever its indexing.
local function values(v)
	local out = {}
	if type(v) == "string" then
		out[1] = v
	elseif type(v) == "table" then
		local keys = {}
		for k in pairs(v) do keys[#keys + 1] = k end
		table.sort(keys)
		for _, k in ipairs(keys) do out[#out + 1] = v[k] end
	end
	return out
end

-- withoutUsher returns the cookie header values without usher's cookies
-- (__usher_wr, __usher_wr_<suffix>, __usher_pow...), joined in one value.
local function withoutUsher(vals)
	local kept = {}
	for _, v in ipairs(vals) do
		for part in string.gmatch(v, "[^;]+") do
			local c = part:gsub("^%s+", ""):gsub("%s+$", "")
			if c ~= "" and not c:find("^__usher_") then kept[#kept + 1] = c end
		end
	end
	return table.concat(kept, "; ")
end

core.register_action("usher-auth", { "http-req" }, function(txn, usher)
	local req = txn.http:req_get_headers()
	local headers = {}
	for _, name in ipairs(pass) do
		if req[name] then headers[name] = values(req[name]) end
	end
	headers["x-forwarded-method"] = { txn.sf:method() }
	headers["x-forwarded-uri"] = { txn.sf:pathq() }
	headers["x-forwarded-host"] = { txn.sf:req_hdr("host") }
	headers["x-forwarded-for"] = { txn.sf:src() }
	headers["x-forwarded-proto"] = { txn.f:ssl_fc() and "https" or "http" }

	-- Whatever usher says, no client's token goes on.
	txn.http:req_del_header("x-usher-admission")

	local hc = core.httpclient()
	local res = hc:get{ url = "http://" .. usher .. "/__usher/auth", headers = headers, timeout = 5000 }
	if not res or not res.status or res.status == 0 then
		txn:done(txn:reply{ status = 503, headers = { ["content-type"] = { "text/plain" },
			["retry-after"] = { "5" } }, body = "The waiting room cannot be reached: try again in a moment.\n" })
		return
	end
	local rh = res.headers or {}
	if res.status >= 200 and res.status < 300 then
		local token = values(rh["x-usher-admission"])[1]
		if token and token ~= "" then
			txn.http:req_set_header("x-usher-admission", token)
		end
		if req["cookie"] then
			local rest = withoutUsher(values(req["cookie"]))
			txn.http:req_del_header("cookie")
			if rest ~= "" then txn.http:req_set_header("cookie", rest) end
		end
		local cookies = values(rh["set-cookie"])
		if #cookies > 0 then txn:set_priv(cookies) end
		return
	end
	local reply = txn:reply{ status = res.status, body = res.body or "" }
	for name, v in pairs(rh) do
		if not hop[string.lower(name)] then
			for _, value in ipairs(values(v)) do reply:add_header(name, value) end
		end
	end
	txn:done(reply)
end, 1)

core.register_action("usher-cookies", { "http-res" }, function(txn)
	local cookies = txn:get_priv()
	if type(cookies) ~= "table" then return end
	for _, c in ipairs(cookies) do txn.http:res_add_header("set-cookie", c) end
end)
