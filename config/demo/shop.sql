-- InterLock demo source `shop`: a small web shop plus an HR table no demo agent may read.
-- Deterministic data (no random()), so documentation and tests can rely on exact rows.

CREATE TABLE public.customers (
    id         bigint PRIMARY KEY,
    name       text NOT NULL,
    email      text NOT NULL,
    country    text NOT NULL,
    created_at timestamptz NOT NULL
);
COMMENT ON TABLE public.customers IS 'People who have an account with the shop.';
COMMENT ON COLUMN public.customers.email IS 'Contact address; personal data, masked for analysts.';

CREATE TABLE public.orders (
    id          bigint PRIMARY KEY,
    customer_id bigint NOT NULL REFERENCES public.customers (id),
    total_cents bigint NOT NULL,
    status      text NOT NULL,
    created_at  timestamptz NOT NULL
);
COMMENT ON TABLE public.orders IS 'One row per order; totals in cents.';
CREATE INDEX orders_customer ON public.orders (customer_id);

CREATE TABLE public.products (
    id          bigint PRIMARY KEY,
    sku         text NOT NULL UNIQUE,
    name        text NOT NULL,
    price_cents bigint NOT NULL
);
COMMENT ON TABLE public.products IS 'The product catalogue.';

CREATE SCHEMA hr;
CREATE TABLE hr.salaries (
    employee_id  bigint NOT NULL,
    amount_cents bigint NOT NULL
);
COMMENT ON TABLE hr.salaries IS 'Confidential: yearly salary per employee.';

INSERT INTO public.customers (id, name, email, country, created_at)
SELECT g,
       f.first[1 + g % 20] || ' ' || f.last[1 + (g / 20) % 25],
       lower(f.first[1 + g % 20]) || '.' || lower(f.last[1 + (g / 20) % 25]) || g || '@example.com',
       f.country[1 + (g * 7) % 12],
       timestamptz '2024-01-01 00:00:00+00' + g * interval '13 hours'
  FROM generate_series(1, 1000) AS g,
       (SELECT ARRAY['Ada','Ben','Chloe','David','Emma','Felix','Grace','Hugo','Iris','Jonas',
                     'Kira','Liam','Mia','Noah','Olga','Paul','Quinn','Rosa','Sami','Tara'] AS first,
               ARRAY['Adler','Baker','Costa','Dubois','Eriksen','Fischer','Garcia','Hansen','Ito',
                     'Jensen','Kowalski','Larsen','Moreau','Novak','Okafor','Petrov','Quint',
                     'Rossi','Schmidt','Tanaka','Ueda','Varga','Weber','Xu','Young'] AS last,
               ARRAY['DE','FR','US','GB','ES','IT','NL','SE','PL','JP','BR','CA'] AS country) AS f;

INSERT INTO public.orders (id, customer_id, total_cents, status, created_at)
SELECT g,
       1 + (g * 7919) % 1000,
       500 + (g * 3571) % 49500,
       (ARRAY['paid','shipped','delivered','refunded'])[1 + (g * 13) % 4],
       timestamptz '2024-03-01 00:00:00+00' + g * interval '47 minutes'
  FROM generate_series(1, 10000) AS g;

INSERT INTO public.products (id, sku, name, price_cents)
SELECT g,
       'SKU-' || lpad(g::text, 5, '0'),
       (ARRAY['Mug','Notebook','Pen','Backpack','Lamp','Chair','Desk','Cable','Charger','Headphones'])[1 + g % 10]
           || ' ' || (ARRAY['Classic','Pro','Mini','Max','Eco'])[1 + (g / 10) % 5] || ' ' || g,
       199 + (g * 1237) % 30000
  FROM generate_series(1, 200) AS g;

INSERT INTO hr.salaries (employee_id, amount_cents)
SELECT g, 3500000 + (g * 104729) % 6500000
  FROM generate_series(1, 100) AS g;

ANALYZE;
