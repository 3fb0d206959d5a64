// The console talks to the HTTP API only (/api/v1). Errors come back as
// {"error": {"type", "message"}} and are thrown as ApiError.

const USER_KEY = 'hms-proxy-user';

export class ApiError extends Error {
  constructor(status, type, message, body) {
    super(message);
    this.status = status;
    this.type = type;
    this.body = body;
  }
}

export function actingUser() {
  return sessionStorage.getItem(USER_KEY) || '';
}

export function setActingUser(name) {
  if (name) sessionStorage.setItem(USER_KEY, name);
  else sessionStorage.removeItem(USER_KEY);
}

/** GET/POST/PUT/DELETE a path under /api/v1; resolves to the JSON answer. */
export async function api(path, { method = 'GET', query, body } = {}) {
  const url = new URL(`/api/v1${path}`, window.location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(key, value);
  }
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const user = actingUser();
  if (user) headers['X-HMS-User'] = user;
  let response;
  try {
    response = await fetch(url, {
      method, headers, credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, 'NetworkError', `the server did not answer (${err.message})`, null);
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.type || 'HTTPError',
      error.message || `${response.status} ${response.statusText}`, data);
  }
  return data;
}

/** Path segments are encoded one by one (names may hold '.', '~', '^'). */
export function seg(text) {
  return encodeURIComponent(text);
}
